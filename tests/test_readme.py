"""Every Python block of README.md runs as written, each on its own in a fresh namespace."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README.read_text(), flags=re.DOTALL | re.MULTILINE)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=lambda i: f"block{i + 1}")
def test_readme_block_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks may write files (res.save("run.npz")); paths into the repository
    monkeypatch.syspath_prepend(str(README.parent))
    for name in ("examples",):  # the blocks name files under examples/ relative to the repository root
        (tmp_path / name).symlink_to(README.parent / name)
    code = compile(BLOCKS[index], f"README.md python block {index + 1}", "exec")
    exec(code, {"__name__": f"readme_block_{index + 1}"})  # noqa: S102 - the README's own code, run as a user would
