# The two commands: `make` (set up and build the course, its site and its manual) and `make test` (every behaviour once, at this host's
# best isolation level; the chapters' committed proofs checked current, no chapter proven again); `make test-all` (what CI
# runs) adds the tier marked `full`, which proves every chapter once from scratch.
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2

STEP   := sh scripts/step.sh
TIMES  := build/.make-times

.PHONY: all build site docs sample install test test-all test-fast bench drift release path clean hub hub-remove-accounts storm
# `make`: set up, build the course, its site and the manual, then grade a small synthetic class so you see the grader
# at work; at its end, how long each step took and what to open next (scripts/make-summary.py). Each step appends its
# seconds to build/.make-times (scripts/step.sh), which a plain `make` clears first.
all: build site docs sample
	@$(BIN)/python scripts/make-summary.py

ifeq ($(filter-out all,$(or $(MAKECMDGOALS),all)),)
  $(shell rm -f $(TIMES))
endif

$(STAMP): requirements.txt requirements-lti.txt pyproject.toml
	@mkdir -p build && date +%s > build/.install-start
	@py=$$(sh scripts/find-python.sh) || exit 1; \
	  if [ ! -x $(BIN)/python ]; then echo "creating $(VENV) with $$py"; "$$py" -m venv $(VENV) || exit 1; fi
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-lti.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)
	@echo "install $$(( $$(date +%s) - $$(cat build/.install-start) ))" >> $(TIMES); rm -f build/.install-start

install: $(STAMP)

# The course: every chapter executed; a chapter whose committed proof (proofs/) is current runs reference-only, one
# whose proof is stale or missing is proven in full (stub, every wrong and alternative answer) and its new proof
# written into proofs/, to commit with the chapter. Then release/, the appendices and LEARNING_PATH.md.
build: $(STAMP)
	@$(STEP) build $(BIN)/jaxpath build --jobs $(JOBS)

# The course site (build/site/index.html) from the executed chapters that `build` wrote.
site: $(STAMP)
	@$(STEP) site $(BIN)/jaxpath site --jobs $(JOBS)

# The manual (build/docs/index.html) from docs/: Sphinx's warnings are errors (a broken reference, a page outside the
# contents); the command reference comes from jaxpath's parsers (sphinx-argparse). No notebook runs, nothing is fetched.
docs: $(STAMP)
	@$(STEP) docs $(BIN)/sphinx-build -W --keep-going -q -b html -d build/.docs-doctrees docs build/docs

sample: $(STAMP)
	@$(STEP) sample $(BIN)/jaxpath sample

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m "not full" --durations=25

# Everything: what `make test` runs and the tier marked `full` (every chapter proven from scratch and compared with
# its committed proof, the hostile corpus at the two other isolation levels, the SIGKILL and Ctrl-C runs, every
# chapter's reference solutions graded), in ONE run of the two workers, the longest tests first
# (tests/durations.json), so that neither tier's last long test leaves a worker idle. Nothing runs only here by
# accident: `full` is the one marker `make test` deselects.
test-all: $(STAMP)
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(HUB_PROXY); \
	  else echo "npm is missing: tests/test_hub.py's hub test will skip (Debian: apt-get install npm)"; fi
	$(BIN)/python -m pytest -n $(JOBS) --durations=25

# Everything that starts no kernel, no grader and no browser (about 20 s): the quick loop while working on
# jaxpath, ruff and the import-linter contracts of jaxpath/'s layers included (tests/test_layers.py), and the check
# that every committed proof is current (tests/test_proofs.py). (The site tests in it read the executed chapters that
# `make` wrote.)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not chapters and not grade and not browser"

# Benchmarks (not tests): validation time per chapter (one at a time, so the times are comparable), mutation
# testing of the whole course (its budget: 20 min on 2 cores), then one batch graded by `jaxpath grade` and by
# stock `nbgrader autograde`, side by side; then the class-wide views (`jaxpath similar`) on synthetic classes of
# 100, 300 and 1000 students, and how their time grows with the class.
bench: $(STAMP)
	$(BIN)/jaxpath validate --jobs 1 --times
	$(BIN)/jaxpath mutants --jobs $(JOBS) --times
	$(BIN)/python benchmarks/bench_grade.py
	$(BIN)/python benchmarks/bench_insight.py

# Upgrade drift: the course on jax 0.12.0 and on 0.11.2, compared with the pinned build, into reports/drift/ (docs/drift.md).
drift: $(STAMP)
	-nice -n 10 $(BIN)/jaxpath drift --jobs $(JOBS) --with 'jax==0.12.0 jaxlib==0.12.0'
	-nice -n 10 $(BIN)/jaxpath drift --jobs $(JOBS) --with 'jax==0.11.2 jaxlib==0.11.2'

# The course on a JupyterHub on this machine, as root (docs/hub.md): deploy/hub.toml's
# courses and accounts (made when missing, with random passwords that it prints), the proxy from
# deploy/package-lock.json; Ctrl-C stops it. `make hub-remove-accounts` removes the accounts it made.
HUB_PROXY := deploy/node_modules/.bin/configurable-http-proxy
$(HUB_PROXY): deploy/package.json deploy/package-lock.json
	npm ci --prefix deploy --no-audit --no-fund
	@touch $@

hub: $(STAMP) $(HUB_PROXY)
	$(BIN)/jaxpath hub --create-accounts

hub-remove-accounts: $(STAMP)
	$(BIN)/jaxpath hub --remove-accounts

release: $(STAMP)
	$(BIN)/jaxpath release

# The deadline storm (docs/storm.md), as root: STUDENTS accounts (made and removed) submit through the exchange in the
# same minute while the instructor collects, graders race on one PostgreSQL gradebook, feedback is fetched by every
# student; the counts are checked and the report written to build/storm/ (report.txt, report.json, storm.svg).
# FAULTS=1 adds the faults (the collector, a grader and PostgreSQL killed in the middle) and the reruns.
STUDENTS ?= 60
storm: $(STAMP)
	$(BIN)/jaxpath storm --students $(STUDENTS) $(if $(FAULTS),--faults)

path: $(STAMP)
	$(BIN)/jaxpath path

clean:
	rm -rf build
