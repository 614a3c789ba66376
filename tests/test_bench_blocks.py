"""benchmarks.blocks: the marked blocks of results/benchmarks.md that benchmark commands
write on their own, and benchmarks.report keeps."""

from benchmarks import blocks

B, E = "<!-- X_BEGIN -->", "<!-- X_END -->"


def test_splice_replaces_in_place_and_appends_when_absent():
    md = f"# Benchmarks\n\nbefore\n\n{B}\nold\n{E}\n\nafter\n"
    new = f"{B}\nnew\n{E}\n"
    got = blocks.splice(md, new, B, E)
    assert got == f"# Benchmarks\n\nbefore\n\n{B}\nnew\n{E}\nafter\n"
    assert blocks.splice("# Benchmarks\n", new, B, E) == f"# Benchmarks\n\n{new}"


def test_kept_is_the_block_with_its_markers(tmp_path):
    new = f"{B}\nrows\n{E}\n"
    path = tmp_path / "b.md"
    blocks.write(path, new, B, E)
    assert path.read_text() == f"# Benchmarks\n\n{new}"
    assert blocks.kept(path.read_text(), B, E) == new
    assert blocks.kept("# Benchmarks\n", B, E) == ""
