"""Recorded values as a person reads them: no dict, list or None."""

from harness import words


def test_a_variant_change_reads_as_words():
    assert words.change_text({"slots": (4, 2)}) == "slots 4 -> 2"
    assert (
        words.change_text({"kv_bytes": (12079595520, ""), "mem_fraction": ("0.90", "0.30")})
        == "kv_bytes 12079595520 -> not set, mem_fraction 0.90 -> 0.30"
    )
    assert words.change_text({"kv_bytes": (1, None), "mem_fraction": ("0.90", "0.90")}) == (
        "kv_bytes 1 -> not set, mem_fraction stays 0.90"
    )
    assert words.change_text(None) == "" and words.change_text({}) == ""


def test_finish_reasons_read_with_their_counts():
    assert words.finish_text({"length": 24}) == "length×24"
    assert words.finish_text({"stop": 3, "length": 21}) == "length×21, stop×3"
    assert words.finish_text({}) == "none recorded" and words.finish_text(None) == "none recorded"
