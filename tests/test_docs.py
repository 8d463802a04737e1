"""Every Python block of README.md and of the documentation pages (docs/**/*.md) runs as written, each on its own in
a fresh namespace; users read no seed, issue or session numbers (the sources are named by author and title)."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [page for page in PAGES if "_build" not in page.parts]
# A block that needs an optional extra says so in a comment, e.g. `# needs the "dask" extra`, and is skipped only
# where that extra is not installed; the module that tells each extra is there:
EXTRA_MODULES = {"plot": "matplotlib", "progress": "tqdm", "dask": "distributed", "xarray": "xarray"}
NEEDS = re.compile(r'^# needs the "(\w+)" extra', flags=re.MULTILINE)


def python_blocks(page):
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(), flags=re.DOTALL | re.MULTILINE)


BLOCKS = [(page, index, block) for page in PAGES for index, block in enumerate(python_blocks(page))]


def _block_id(item):
    page, index, _ = item
    return f"{page.relative_to(ROOT).as_posix()}-block{index + 1}"


def test_readme_and_pages_have_python_blocks():
    assert python_blocks(ROOT / "README.md")
    pages_with_blocks = {page.name for page, _, _ in BLOCKS}
    assert {"getting_started.md", "models.md", "loops.md", "integrators.md", "spatial.md"} <= pages_with_blocks


@pytest.mark.parametrize("item", BLOCKS, ids=_block_id)
def test_python_block_runs(item, tmp_path, monkeypatch):
    page, index, block = item
    for extra in NEEDS.findall(block):
        if importlib.util.find_spec(EXTRA_MODULES[extra]) is None:
            pytest.skip(f"needs the {extra!r} extra ({EXTRA_MODULES[extra]} is not installed)")
    monkeypatch.chdir(tmp_path)  # blocks may write files (res.save("run.npz")); paths into the repository
    monkeypatch.syspath_prepend(str(ROOT))
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # blocks name files under examples/ from the root
    name = f"{page.relative_to(ROOT).as_posix()} python block {index + 1}"
    exec(compile(block, name, "exec"), {"__name__": name})  # noqa: S102 - the page's own code, run as a user would


# The project's history (seed, issue and session numbers) is not how users find a source. numpy's `seed=` is not
# history: the patterns want a number after a space, dash or underscore.
HISTORY = re.compile(r"\bseeds?[ _-]?0\d\d|\bissues? #?\d+|\bsessions? \d+", flags=re.IGNORECASE)


def _user_files():
    yield ROOT / "README.md"
    yield from (ROOT / "recursive_mbd").rglob("*.py")
    yield from (path for path in (ROOT / "docs").rglob("*") if path.suffix in (".md", ".py", ".rst")
                and "_build" not in path.parts and "generated" not in path.parts)
    yield from (path for path in (ROOT / "examples").rglob("*") if path.is_file() and path.suffix != ".pyc")


def test_no_history_numbers_for_users():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in _user_files() for number, line in enumerate(path.read_text().splitlines(), 1)
             if HISTORY.search(line)]
    for path in (ROOT / "examples").rglob("*"):
        if HISTORY.search(path.name):
            found.append(f"{path.relative_to(ROOT)}: the file's name")
    assert not found, "name sources by author and title, not by seed, issue or session:\n" + "\n".join(found)
