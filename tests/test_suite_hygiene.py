"""The suite's own lint (issue 44, point 4): no test sleeps and then asserts on the clock.

A test that sleeps and then bounds the elapsed time (or checks a state after "long enough")
passes or fails with the machine's load, not with the product. Inject a clock or count steps
instead. The check is an AST scan of every module under tests/: in one function, a call to
time.sleep / asyncio.sleep (or a bare `sleep` imported from either) followed by an `assert`
that reads the clock (time.monotonic, time.time, perf_counter, their _ns forms) or a name
holding an elapsed time (`elapsed`, `duration`, `took`, `waited`...). A polling loop's failure
guard (`assert time.monotonic() < deadline`: a name with "deadline" in it) is not a claim about
speed and is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SLEEPS = {("time", "sleep"), ("asyncio", "sleep")}
CLOCKS = {"monotonic", "time", "perf_counter", "monotonic_ns", "time_ns", "perf_counter_ns"}
TIME_WORDS = ("elapsed", "duration", "took", "waited", "seconds_taken", "wall")

# path relative to tests/ -> why it may: none today.
ALLOWED: dict[str, str] = {}


def _dotted(node: ast.AST) -> tuple[str, ...]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def _bare_imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound by `from time import sleep, monotonic` (and asyncio's sleep)."""
    sleeps, clocks = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("time", "asyncio"):
            for alias in node.names:
                if alias.name == "sleep":
                    sleeps.add(alias.asname or alias.name)
                elif node.module == "time" and alias.name in CLOCKS:
                    clocks.add(alias.asname or alias.name)
    return sleeps, clocks


def _is_sleep(call: ast.Call, bare: set[str]) -> bool:
    name = _dotted(call.func)
    return name[-2:] in SLEEPS or (len(name) == 1 and name[0] in bare)


def _reads_time(node: ast.AST, bare_clocks: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = _dotted(sub.func)
            if (len(name) >= 2 and name[-2] == "time" and name[-1] in CLOCKS) or (
                    len(name) == 1 and name[0] in bare_clocks):
                return True
        if isinstance(sub, ast.Name | ast.Attribute):
            word = sub.id if isinstance(sub, ast.Name) else sub.attr
            if any(w in word.lower() for w in TIME_WORDS):
                return True
    return False


def _is_deadline_guard(test: ast.AST) -> bool:
    names = [sub.id if isinstance(sub, ast.Name) else sub.attr for sub in ast.walk(test)
             if isinstance(sub, ast.Name | ast.Attribute)]
    return any("deadline" in name.lower() for name in names)


def findings(source: str, path: str = "<planted>") -> list[str]:
    """`path:line: ...` for each assert on time that follows a sleep in the same function."""
    tree = ast.parse(source)
    bare_sleeps, bare_clocks = _bare_imports(tree)
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        # Only this function's own body: a nested function is scanned on its own.
        own = [n for n in _own_nodes(func)]
        sleeps = [n.lineno for n in own if isinstance(n, ast.Call) and _is_sleep(n, bare_sleeps)]
        if not sleeps:
            continue
        first = min(sleeps)
        for node in own:
            if (isinstance(node, ast.Assert) and node.lineno > first and _reads_time(node.test, bare_clocks)
                    and not _is_deadline_guard(node.test)):
                found.append(f"{path}:{node.lineno}: asserts on time after sleeping at line {first} "
                             f"in {func.name}()")
    return found


def _own_nodes(func: ast.AST):
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


def test_no_test_sleeps_and_then_asserts_on_the_clock():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        relative = str(path.relative_to(TESTS))
        if relative in ALLOWED or "node_modules" in path.parts:
            continue
        found += findings(path.read_text(), relative)
    assert found == [], "Inject a clock or count steps instead:\n" + "\n".join(found)


def test_the_scan_catches_a_planted_sleep_then_time_assert(tmp_path):
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        "import time\n"
        "from asyncio import sleep as nap\n"
        "def test_it_retries_quickly():\n"
        "    started = time.monotonic()\n"
        "    time.sleep(0.2)\n"
        "    assert time.monotonic() - started < 1\n"
        "async def test_async_form():\n"
        "    await nap(0.1)\n"
        "    elapsed = 3\n"
        "    assert elapsed < 5\n"
        "def test_a_sleep_with_no_time_assert_is_not_flagged():\n"
        "    time.sleep(0.01)\n"
        "    assert 1 + 1 == 2\n"
        "def test_a_time_assert_with_no_sleep_is_not_flagged():\n"
        "    assert time.time() > 0\n"
        "def test_a_polling_loops_failure_guard_is_not_flagged():\n"
        "    deadline = time.monotonic() + 60\n"
        "    while not ready():\n"
        "        time.sleep(0.05)\n"
        "        assert time.monotonic() < deadline, 'never ready'\n"
    )
    assert findings(planted.read_text(), planted.name) == [
        "test_planted.py:6: asserts on time after sleeping at line 5 in test_it_retries_quickly()",
        "test_planted.py:10: asserts on time after sleeping at line 8 in test_async_form()",
    ]
