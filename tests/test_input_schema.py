"""The workflow input's JSON Schema is published, so callers in other languages can check before they start."""

from __future__ import annotations

import json

from stalwart.contracts.run_input import RunInput

from support.repo_paths import REPO

SCHEMA_FILE = REPO / "docs" / "run-input.schema.json"


def test_the_published_input_schema_is_the_current_one():
    published = json.loads(SCHEMA_FILE.read_text())
    current = RunInput.model_json_schema()
    assert published == current, (
        "docs/run-input.schema.json is stale; regenerate it with "
        "`python -c 'import json; from stalwart.contracts.run_input import RunInput; "
        "print(json.dumps(RunInput.model_json_schema(), indent=2, sort_keys=True))' > docs/run-input.schema.json`"
    )
