# Everything a fresh machine needs: Python >= 3.11, gcc and make.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint unit bench codegen clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,spark]'
	touch $(STAMP)

RUN_STAMP := $(VENV)/.run-stamp
$(RUN_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $(RUN_STAMP)

BENCH_STAMP := $(VENV)/.bench-stamp
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	touch $(BENCH_STAMP)

## run: install into .venv and run a broker on localhost:9092 (data in ./tidelog-data)
run: $(RUN_STAMP)
	$(VENV)/bin/tidelog serve

## test: install into .venv, lint, check import layers and run the whole test suite
test: $(STAMP) lint
	tools/debian_test_deps.sh
	@# the hundreds of brokers and CLIs the suite starts read compiled modules even where PYTHONDONTWRITEBYTECODE is set
	$(PY) -m compileall -q src tests bench > /dev/null
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=40 tests

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests $(wildcard bench tools examples)
	$(VENV)/bin/lint-imports

## bench: install the peers benchmarks compare against, then run every benchmark
bench: $(BENCH_STAMP)
	for b in bench/*.py; do case $$b in */null_broker.py) ;; *) $(PY) $$b --quick ;; esac; done

## codegen: regenerate src/tidelog/protocol/{messages,coordinator_records} from ../shared/kafka-protocol (tools/codegen)
## and src/tidelog/protocol/tubemq/generated from ../shared/tubemq-protocol (tools/tubemq_codegen)
codegen: $(STAMP)
	$(PY) -m tools.codegen
	$(PY) -m tools.tubemq_codegen

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
