# Two commands do all set-up on a fresh machine:
#   make demo   -- create .venv from uv.lock (runtime only), run the bundled coding-agent scenario
#   make test   -- create .venv from uv.lock with the dev extras, run the whole test suite
# and one opens the notebooks:
#   make notebooks -- add JupyterLab to .venv (the `notebooks` extra, from uv.lock) and open notebooks/ in it
# Installs come from uv.lock (exact versions, hashes); `make lock` refreshes it.
# --compile-bytecode: the installed packages get their .pyc files at install time (as pip writes them),
# so every agentsim command starts without recompiling NumPy, pandas, pydantic... from source.
PYTHON ?= python3
UV_VERSION := 0.13.9
UVENV  := .uv
UV     := $(UVENV)/bin/uv
VENV   := .venv
BIN    := $(VENV)/bin
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: demo test notebooks lint lock bench fuzz mutate clean

# uv itself, pinned, in a venv of its own (nothing installed system-wide)
$(UV):
	$(PYTHON) -m venv $(UVENV)
	$(UVENV)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# runtime dependencies only (what running a scenario needs); --inexact keeps dev extras if present
$(VENV)/.installed-run: pyproject.toml uv.lock | $(UV)
	$(UV) sync --quiet --locked --compile-bytecode --inexact --python $(PYTHON)
	touch $@

$(VENV)/.installed-dev: pyproject.toml uv.lock | $(UV)
	$(UV) sync --quiet --locked --compile-bytecode --extra dev --python $(PYTHON)
	rm -f $(VENV)/.installed-mutate $(VENV)/.installed-notebooks
	touch $@ $(VENV)/.installed-run

$(VENV)/.installed-mutate: pyproject.toml uv.lock | $(UV)
	$(UV) sync --quiet --locked --compile-bytecode --extra dev --extra mutate --python $(PYTHON)
	rm -f $(VENV)/.installed-notebooks
	touch $@ $(VENV)/.installed-dev $(VENV)/.installed-run

demo: $(VENV)/.installed-run
	$(BIN)/agentsim run scenarios/coding-agent.yaml --out results/coding-agent

# JupyterLab and a kernel (the `notebooks` extra) added to .venv, whatever else it holds (--inexact: after
# `make demo` or `make test` alike; `make test` syncs exactly and takes them out again, so the stamp goes too)
$(VENV)/.installed-notebooks: pyproject.toml uv.lock | $(UV)
	$(UV) sync --quiet --locked --compile-bytecode --inexact --extra notebooks --python $(PYTHON)
	touch $@ $(VENV)/.installed-run

# the notebooks in JupyterLab (on a machine without a browser: make notebooks JUPYTER_ARGS=--no-browser, then
# open the address it prints); as root (a container) JupyterLab needs --allow-root, added here
JUPYTER_ARGS ?=
notebooks: $(VENV)/.installed-notebooks
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root) $(JUPYTER_ARGS)

# line coverage of src/agentsim (subprocesses included) in the summary; fails under the floor in pyproject.toml
test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -n 2 -q --cov=agentsim --cov-report=term:skip-covered

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

# mutation testing of the core modules ([tool.mutmut] in pyproject.toml; not part of CI).
# The measured scope (docs/validation.md §7): the rule-bearing functions of the core modules, as mutmut
# mutant-name globs. Narrow it with ONLY, e.g. `make mutate ONLY='agentsim.sim.context*'` (or
# ONLY='$(MUTATE_STREAM)' for the streaming scope alone, ONLY='$(MUTATE_FIT)' for the measuring and fitting code); results in
# mutants/, `.venv/bin/mutmut results` lists them, `.venv/bin/mutmut show NAME` shows one. One child by
# default (MUTATE_JOBS=2 on a quiet machine).
MUTATE_CORE = 'agentsim.sim.context*' \
	'agentsim.pricing.rates.x*Rate*' 'agentsim.pricing.rates.x_call_cost*' 'agentsim.pricing.rates.x__rate__*' \
	'agentsim.pricing.rates.x_rates_from_fields*' 'agentsim.pricing.rates.x_compile_price*' \
	'agentsim.pricing.rates.x_needs_default_date*' \
	'agentsim.plan.limits*' \
	'agentsim.sim.payoff*' 'agentsim.analysis.tradeoffs.x_pareto_mask*' 'agentsim.analysis.tradeoffs.x_per_success*' \
	'agentsim.analysis.tradeoffs.x_mark_pareto*' 'agentsim.analysis.tradeoffs.x_break_even*' \
	'agentsim.analysis.tradeoffs.x_cheapest_intervals*' 'agentsim.analysis.tradeoffs.x_spend_sizing*' \
	'agentsim.sim.results.x__f*' 'agentsim.sim.results.x__mean*' 'agentsim.sim.results.x_describe*' \
	'agentsim.sim.results.x*CallStats*' 'agentsim.sim.results.x_compare*' 'agentsim.sim.results.x*Results*_success*' \
	'agentsim.replay.retime.x_split_call*' 'agentsim.replay.retime.x_timeline*' 'agentsim.replay.retime.x__costs*' \
	'agentsim.replay.retime.x__fsum*' \
	'agentsim.sim.rules*'
# the streaming rules, what consumers live through, SLO attainment and the workload loop (issue 24); the
# consumer kinds' metric functions (their pydantic specs and registration are not rules)
MUTATE_STREAM = 'agentsim.sim.streaming*' 'agentsim.sim.stalls*' 'agentsim.sim.stream_metrics*' \
	'agentsim.sim.stream_stats*' 'agentsim.sim.slo*' 'agentsim.sim.workload*' \
	'agentsim.consumers.reader.x_read_times*' 'agentsim.consumers.reader.x_measure*' \
	'agentsim.consumers.render.x_measure*' \
	'agentsim.consumers.speech.x_draws*' 'agentsim.consumers.speech.x_schedule*' \
	'agentsim.consumers.speech.x__one_call*' 'agentsim.consumers.speech.x_measure*' 'agentsim.consumers.speech.x_timeline*'
# the measuring and fitting code (issue 38): calibrate's fits (TTFT, output speed, stream gaps, stall lengths,
# conditions, context speed, queueing), the live probe's reading of a stream, sessions as steps and the scenario
# built from them; context-dependent speed as compiled
MUTATE_FIT = 'agentsim.measure.*' 'agentsim.fit.*' 'agentsim.plan.context_speed.*'
MUTATE_JOBS ?= 1
ONLY ?= $(MUTATE_CORE) $(MUTATE_STREAM) $(MUTATE_FIT)
mutate: $(VENV)/.installed-mutate
	$(BIN)/mutmut run --max-children $(MUTATE_JOBS) $(ONLY)
	$(BIN)/mutmut results | grep -v "not checked" || true  # survivors and time-outs of this scope

# refresh uv.lock after changing dependencies in pyproject.toml (then commit it)
lock: $(UV)
	$(UV) lock --upgrade --python $(PYTHON)

# 2,000 fuzzed scenarios from a random seed (printed; replay with AGENTSIM_FUZZ_SEED=<seed>)
fuzz: $(VENV)/.installed-dev
	AGENTSIM_FUZZ_EXAMPLES=$${AGENTSIM_FUZZ_EXAMPLES:-2000} $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_fuzz_scenarios.py

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/budgets.py
	$(BIN)/python benchmarks/engine.py

clean:
	rm -rf $(VENV) $(UVENV) results .pytest_cache mutants .coverage .coverage.*
