# Casework: `make run` to start the product, `make test` to run the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-pg lint migrate seed worker web clean

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@bash bin/report-libs
	@touch $(STAMP)

# A SECRET_KEY made once per checkout for the local server (var/ is never committed).
var/secret_key:
	@mkdir -p var
	@$(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key

# The Ed25519 key that signs audit checkpoints, made once per checkout (README, "Audit checkpoints").
# Never regenerated: a new key is a rotation (keep the old public key in var/audit_keyring).
var/audit_signing_key: | $(STAMP) var/secret_key var/field_encryption_key
	@SECRET_KEY="$$(cat var/secret_key)" $(BIN)/python manage.py audit_key --generate var/audit_signing_key

# The Fernet key that encrypts secrets and absence details at rest, made once per checkout
# (development only; production sets FIELD_ENCRYPTION_KEYS). Never regenerated: a new key is a
# rotation (README, "Personal data").
var/field_encryption_key:
	@mkdir -p var
	@$(PYTHON) -c "import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())" > var/field_encryption_key

run: $(STAMP) var/secret_key var/audit_signing_key var/field_encryption_key
	@bash bin/run

# The whole suite on the PostgreSQL answering on 127.0.0.1:5432 or DATABASE_URL, else on SQLite,
# said loudly (bin/test-db). Two pytest-xdist workers per core, at most 8 (TEST_WORKERS=0: in this
# process): a worker spends much of its time waiting (a browser, a live server, a real worker,
# SMTP, a subprocess starting), and another worker's test uses the core meanwhile.
# --maxschedchunk 1: a worker gets two tests to start with, then one each time it ends one, so the
# long tests (tests/conftest.py puts one at the head of each worker's pair) run side by side.
# One part: make test PYTEST_ARGS=tests/fraud (or .venv/bin/python -m pytest tests/fraud).
TEST_WORKERS ?= $(shell n=$$(( $$(nproc) * 2 )); [ $$n -gt 8 ] && n=8; echo $$n)
# Bytecode, and pytest's rewritten test modules, are kept under var/pycache even where the
# environment says PYTHONDONTWRITEBYTECODE: otherwise every worker process, and every worker or
# command a test starts, compiles the project and rewrites ~400 modules' asserts again (about
# 15 s of CPU a process here).
PYTEST = env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/var/pycache \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist load --maxschedchunk 1 $(PYTEST_ARGS)

test: $(STAMP)
	@bash bin/browser
	@bash bin/oidc-provider
	@bash bin/test-db $(PYTEST)

# The same suite on a throwaway PostgreSQL cluster (bin/test-pg), removed afterwards.
test-pg: $(STAMP)
	@bash bin/browser
	@bash bin/oidc-provider
	@bash bin/test-pg $(PYTEST)

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf var/celery var/traces var/test.sqlite3*
