# The two front-door commands are `make demo` and `make test`; both set up .venv from requirements.lock first.
# `make check` is the fast tier a contributor runs after each change (tests/unit and ruff, under 3 minutes).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.lock | cut -c1-12)
SITE := $(VENV)/lib/python3.11/site-packages
TEST_WORKERS ?= 2
# where lakeloader.core.spark_conf.jvm_jar() looks for it
JVM_JAR := $(VENV)/lakeloader-jvm.jar
# where bin/with-airflow looks for it
CLASS_ARCHIVE := $(VENV)/spark-classes.jsa

.PHONY: setup jars demo check test lint lock clean bench bench-small

setup: $(STAMP) $(JVM_JAR) $(CLASS_ARCHIVE)

# The editable install (pyproject.toml) puts lakeloader (jobs/) and lakeloader_airflow (plugins/) on the venv's path
# and makes the `lakeloader` command; built with the venv's setuptools (pinned in the lock), so offline like the
# rest. lakeloader-tools.pth adds the repository root only for what is not shipped: `tools` (generator, oracle
# model, benchmark) for the tests, bin/demo and make bench, also in the Spark workers and Airflow subprocesses
# the tests start (they run this interpreter, outside pytest's pythonpath).
$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet uv==0.13.9
	$(VENV)/bin/uv pip sync --quiet --python $(PY) requirements.lock
	rm -f $(SITE)/lakeloader.pth
	$(VENV)/bin/uv pip install --quiet --python $(PY) --no-deps --no-build-isolation -e .
	printf '%s\n' "$(CURDIR)" > $(SITE)/lakeloader-tools.pth
	rm -f $(VENV)/.installed-* && touch $@

# The project's JVM functions (jvm/src: SQL functions Spark lacks, registered in every session by lakeloader.spark),
# compiled against the venv's pyspark into one small jar (JVM_JAR); needs a JDK (javac), as every session needs it.
$(JVM_JAR): $(STAMP) bin/build-jvm $(shell find jvm/src -name '*.java')
	bin/build-jvm $(PY) $@

# An archive of the classes a local Spark driver loads (Java's class data sharing), dumped by a training run of one
# small hour (~1 min); bin/with-airflow starts every local driver with it, about 6 s sooner. Dumped again after a new
# lock (Spark's jars) or local.conf; without it (a JVM that cannot dump one) everything runs, only slower to start.
$(CLASS_ARCHIVE): $(STAMP) $(JVM_JAR) bin/build-class-archive config/spark/local.conf
	bin/build-class-archive $(PY) $@ || echo "WARNING: no archive of Spark's classes: local Spark drivers start without one" >&2

# The pinned jars Spark needs for Delta on Spark, s3a:// and Avro (config/jars/), fetched with mvn into
# .venv/jars and checked against config/jars/SHA256SUMS (~40 s on an empty Maven cache, ~15 s warm; 570 MB).
# Not part of `setup`: the embedded default (`make demo`) needs neither the jars nor mvn.
JARS := $(VENV)/jars
JARS_STAMP := $(JARS)/.verified-$(shell cat config/jars/pom.xml config/jars/SHA256SUMS | sha1sum | cut -c1-12)

jars: $(JARS_STAMP)

$(JARS_STAMP): config/jars/pom.xml config/jars/SHA256SUMS bin/fetch-jars
	bin/fetch-jars $(JARS)
	touch $@

demo: setup
	bin/demo

# The fast tier: lint and tests/unit (no Spark session, no Airflow subprocess), fewer Hypothesis examples.
check: setup
	$(VENV)/bin/ruff check .
	bin/with-airflow $(PY) -m pytest tests/unit --hypothesis-profile=check

# Everything: tests/unit, tests/spark and tests/system (what CI runs, .ci/run), in TEST_WORKERS pytest-xdist
# processes (each with its own Spark session, Airflow home and S3 server): a Spark test on small data keeps about
# one core busy, so two workers use a 2-core machine fully. Each free worker takes the next test, costliest first,
# and the tests sharing an Airflow run on one worker (tests/conftest.py).
# The jars' test is skipped (with the reason) when they cannot be fetched, rather than failing every test.
test: setup
	@$(MAKE) --no-print-directory jars || echo "WARNING: could not fetch the pinned jars with mvn: tests/system/test_spark_jars.py is skipped" >&2
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	bin/with-airflow $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# The benchmark (docs/performance.md); not part of `make test`. BENCH_ARGS adds options, e.g. BENCH_ARGS="--no-verify".
# Under bin/with-airflow, as the steps run: config/spark/local.conf's settings and the archive of Spark's classes.
bench: setup
	bin/with-airflow $(PY) -m tools.bench all $(BENCH_ARGS)

bench-small: setup
	bin/with-airflow $(PY) -m tools.bench all --scale 0.02 $(BENCH_ARGS)

# lint-imports: the import contracts in pyproject.toml (docs/architecture.md, "Packages and boundaries");
# mypy: the type check of lakeloader and lakeloader_airflow, configured in pyproject.toml.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

lock:
	$(VENV)/bin/uv pip compile requirements.txt --python-version 3.11 --no-header -o requirements.lock

clean:
	rm -rf var build .pytest_cache .import_linter_cache .mypy_cache
