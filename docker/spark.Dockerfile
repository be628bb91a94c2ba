# The Spark master and worker image: the same Python base as the Airflow image (executors' Python workers run
# the same interpreter as the driver in the scheduler's container, as client mode requires), Java 17, pyspark
# and the project's other packages from requirements.lock (Python steps such as DTS Avro's decoder import
# lakeloader on the executors), the project's jobs/, and the same pinned jars.
#
#   docker build -f docker/spark.Dockerfile -t lakeloader-spark .      (from the repository root)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS jars
RUN apt-get update \
    && apt-get install -y --no-install-recommends maven openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY config/jars/ config/jars/
COPY bin/fetch-jars bin/fetch-jars
RUN bin/fetch-jars /opt/lakeloader/jars

# The project's JVM functions (jvm/src), compiled against the lock's pyspark in a stage of its own, so the image
# carries no JDK.
FROM ${PYTHON_IMAGE} AS jvm
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY requirements.lock ./
RUN pip install --no-cache-dir uv==0.13.9 \
    && uv pip install --system --no-cache "$(grep '^pyspark==' requirements.lock)"
COPY jvm/ jvm/
COPY bin/build-jvm bin/build-jvm
RUN bin/build-jvm python /opt/lakeloader/lakeloader-jvm.jar

FROM ${PYTHON_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps tini \
    && rm -rf /var/lib/apt/lists/*
ARG SPARK_UID=50000
RUN useradd --uid "${SPARK_UID}" --gid 0 --create-home --home-dir /opt/spark-work spark
WORKDIR /opt/lakeloader
COPY requirements.lock ./
RUN pip install --no-cache-dir uv==0.13.9 \
    && uv pip install --system --no-cache -r requirements.lock
COPY --from=jars /opt/lakeloader/jars/ /opt/lakeloader/jars/
COPY --from=jvm /opt/lakeloader/lakeloader-jvm.jar /opt/lakeloader/lakeloader-jvm.jar
COPY jobs/ jobs/
RUN printf '%s\n' /opt/lakeloader /opt/lakeloader/jobs \
        > "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/lakeloader.pth"
COPY docker/spark-entrypoint.sh /usr/local/bin/
ENV LAKELOADER_JARS=/opt/lakeloader/jars \
    LAKELOADER_JVM_JAR=/opt/lakeloader/lakeloader-jvm.jar \
    PYSPARK_PYTHON=/usr/local/bin/python \
    SPARK_WORKER_DIR=/opt/spark-work/work \
    SPARK_NO_DAEMONIZE=1
USER spark
EXPOSE 7077 8080 8081
ENTRYPOINT ["tini", "--", "/usr/local/bin/spark-entrypoint.sh"]
CMD ["master"]
