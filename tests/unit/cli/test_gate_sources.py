"""Which notebook and label `harness gate --baseline/--candidate` names (gate_runs.notebook_of)."""

import pytest

from harness.sizing.gate_runs import notebook_of as _source
from harness.errors import ConfigError


def test_a_missing_path_is_refused_and_a_label_with_a_slash_is_read_from_the_labbook(tmp_path):
    book = tmp_path / "labbook.md"
    book.write_text("")
    for gone in (str(tmp_path / "none.md"), f"{tmp_path}/gone/labbook.md:base", "./nowhere/run"):
        with pytest.raises(ConfigError, match="no notebook or run directory at"):
            _source(gone, str(book))
    assert _source("llama/q4", str(book)) == (book, "llama/q4")
    assert _source(f"{book}:base", "elsewhere.md") == (book, "base")
    assert _source(str(tmp_path), "elsewhere.md") == (book, "")
