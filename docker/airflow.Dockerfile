# The Airflow services' image (api-server, scheduler, dag-processor, triggerer; LocalExecutor runs the tasks, and
# so the Spark drivers, in the scheduler's container): Python 3.11 and Java 17 as the Spark image has them (a
# client-mode driver and its executors must run the same Python), the project's packages from requirements.lock,
# and the pinned jars of config/jars checked against config/jars/SHA256SUMS at build time.
#
#   docker build -f docker/airflow.Dockerfile -t lakeloader-airflow .      (from the repository root)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# The jars: fetched with Maven in a stage of their own, so the image carries neither Maven nor its cache.
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
ARG AIRFLOW_UID=50000
RUN useradd --uid "${AIRFLOW_UID}" --gid 0 --create-home --home-dir /opt/airflow airflow
WORKDIR /opt/lakeloader
COPY requirements.lock docker/requirements-docker.txt ./
RUN pip install --no-cache-dir uv==0.13.9 \
    && uv pip install --system --no-cache -r requirements.lock -r requirements-docker.txt
COPY --from=jars /opt/lakeloader/jars/ /opt/lakeloader/jars/
COPY --from=jvm /opt/lakeloader/lakeloader-jvm.jar /opt/lakeloader/lakeloader-jvm.jar
COPY jobs/ jobs/
COPY plugins/ plugins/
COPY dags/ dags/
COPY config/ config/
COPY bin/ bin/
# The project is not a package: its folders go on the interpreter's path, as `make setup` does for the venv
# (the compose file mounts dags/, jobs/, plugins/ and config/ over these copies).
RUN printf '%s\n' /opt/lakeloader /opt/lakeloader/jobs /opt/lakeloader/plugins \
        > "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/lakeloader.pth"
COPY docker/airflow-entrypoint.sh docker/airflow-init.sh /usr/local/bin/
ENV LAKELOADER_JARS=/opt/lakeloader/jars \
    LAKELOADER_JVM_JAR=/opt/lakeloader/lakeloader-jvm.jar \
    LAKELOADER_CONFIG=/opt/lakeloader/config/sources.yaml \
    AIRFLOW_HOME=/opt/airflow \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/lakeloader/dags \
    AIRFLOW__CORE__PLUGINS_FOLDER=/opt/lakeloader/plugins \
    AIRFLOW__CORE__LOAD_EXAMPLES=False \
    PYSPARK_PYTHON=/usr/local/bin/python \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python
USER airflow
ENTRYPOINT ["tini", "--", "/usr/local/bin/airflow-entrypoint.sh"]
CMD ["airflow", "version"]
