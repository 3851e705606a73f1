# Casework: `make run` to start the product, `make test` to run the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint migrate seed worker web clean

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
var/audit_signing_key: | $(STAMP) var/secret_key
	@SECRET_KEY="$$(cat var/secret_key)" $(BIN)/python manage.py audit_key --generate var/audit_signing_key

run: $(STAMP) var/secret_key var/audit_signing_key
	@bash bin/run

test: $(STAMP)
	@bash bin/browser
	@bash bin/oidc-provider
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf var/celery var/traces var/test.sqlite3*
