# voicetrace: `make demo` installs everything (first time) and replays a sample call;
# `make test` installs what the tests need and runs them.
VENV   := .venv
BIN    := $(VENV)/bin
CALL   ?= samples/calls/claim_status.wav

.PHONY: install demo test test-unit samples doctor clean jaeger bench

install:
	scripts/install.sh

demo: install
	id=demo-$$(date +%Y%m%d-%H%M%S); $(BIN)/voicetrace run $(CALL) --out runs --run-id $$id && \
	  $(BIN)/voicetrace report runs/$$id -o runs/$$id/report.html --json > runs/$$id/report.json

test: install
	scripts/install-test-deps.sh
	$(BIN)/pytest -q -ra

test-unit:
	$(BIN)/pytest -q -m "not integration"

samples:
	$(BIN)/python samples/make_samples.py

doctor:
	$(BIN)/voicetrace doctor

# Jaeger with in-memory storage (UI/query API :16686, OTLP :4317 gRPC and :4318 HTTP), built from
# the Go module proxy the first time; then: voicetrace run CALL --otlp http://localhost:4317
jaeger:
	scripts/build-jaeger.sh
	$${VOICETRACE_CACHE:-$$HOME/.cache/voicetrace}/bin/jaeger --config dashboards/jaeger.yaml

# Benchmarks (issue 7): each prints ratios measured side by side in one run; see BENCHMARKS.md.
bench: install
	$(BIN)/python bench/timing_accuracy.py
	$(BIN)/python bench/capture_cost.py
	$(BIN)/python bench/metrics_cost.py
	$(BIN)/python bench/loop_lag_cost.py
	$(BIN)/python bench/report_scale.py
	$(BIN)/python bench/v2v.py --overhead --calls claim_status --repeat 2
	$(BIN)/python bench/v2v.py

clean:
	rm -rf runs .pytest_cache
