# Two entry points for a newcomer: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
PYTEST_ARGS ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MINDSPORE_STAMP := $(VENV)/.installed-mindspore

.PHONY: demo test check setup mindspore sandbox-tools benchmark clean

setup: $(STAMP) sandbox-tools

# torch first and pinned: 2.13.0 CPU, the build this kit is tested with, from PyTorch's CPU index
# (PyPI's torch is the CUDA build: gigabytes more). Where that index is out of reach (a PyPI mirror
# only), PyPI's build, and setup says which build it installed. torch's own dependencies come with
# the kit's, from PyPI.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-deps --retries 1 --timeout 30 --index-url $(TORCH_CPU_INDEX) "torch==2.13.0+cpu" \
	  || { echo "note: $(TORCH_CPU_INDEX) is out of reach: installing torch 2.13.0 from PyPI (its CUDA build, several GB)"; \
	       $(BIN)/pip install --quiet torch==2.13.0; }
	$(BIN)/pip install --quiet -e ".[classroom,test]"
	@$(BIN)/python -c "import torch; print('installed torch', torch.__version__, '(CPU build)' if torch.version.cuda is None else '(CUDA build)')"
	touch $(STAMP)

# The MindSpore track (optional for users, always for the tests): MindSpore 2.10 CPU (~800 MB
# download) and numpy<2, into the same .venv.
mindspore: $(MINDSPORE_STAMP)

$(MINDSPORE_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e ".[classroom,test,mindspore]"
	touch $(MINDSPORE_STAMP)

# bubblewrap isolates student code; without it grading still runs but every report says which
# protections are missing.
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || echo "note: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) for the full sandbox"; }

demo: setup
	$(BIN)/grade examples/class --out reports/example-class --force

# The linter, the formatter's check and the type checker first (pyproject.toml configures them),
# then the tests. PYTEST_ARGS narrows the pytest run, e.g. make test PYTEST_ARGS="-k release"
# (PYTEST_ARGS="-n 0" for one process). pytest-xdist runs one worker per core; a test file runs
# whole on one worker (its module fixtures are made once), the longest files first (tests/conftest.py).
test: setup mindspore
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The inner loop: the same linter, formatter check and type checker, and the tests that start no
# sandbox pool, no nbgrader and no clone (marker `inner`, tests/conftest.py).
check: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto -m inner $(PYTEST_ARGS)

benchmark: setup
	$(BIN)/python benchmarks/throughput.py

clean:
	rm -rf $(VENV) reports .pytest_cache
