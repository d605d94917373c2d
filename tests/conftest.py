"""Shared fixtures (workflow files in a test's temporary folder, PostgreSQL, replicas), the suite's two tiers, and
AgentMap's own files kept out of the checkout.

The fast tier (`pytest -n auto`, the README's command) is every test that starts no database, Ray, browser or
process it kills or signals; the component tier (`pytest -n auto --tier component`) is the rest. A test is in the
component tier when it carries one of `COMPONENT_MARKERS`, uses a PostgreSQL fixture or runs with a `postgres`
parameter; such tests get the `component` mark, so `-m component` selects them too.

AgentMap keeps its own files (saved runs, the decision log, the caches) in `$AGENTMAP_STATE_DIR`, else in
`.agentmap/` of the working folder, which for many tests is the checkout: every test gets its own state folder
under its `tmp_path` (the fixtures and servers a module or session shares, one for the session), and the session
fails when the checkout's `.agentmap/` was written during it (`agentmap logs` there shows only its owner's runs).
"""

from __future__ import annotations

import functools
import os
import signal
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from components import RayCluster

WriteCsv = Callable[..., Path]

COMPONENT_MARKERS = ("slow", "postgres", "ray", "browser")
"""The marks that put a test in the component tier (pyproject.toml describes each)."""

_COMPONENT_FIXTURES = {"postgres_server", "postgres_url", "postgres_with_outage", "replicas"}
TIERS = ("fast", "component", "all")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=TIERS,
        default=None,
        help="fast: tests that start no database, Ray, browser or killed process (the default when no test file "
        "is named); component: the others; all: both (the default when a test file or test is named). "
        "AGENTMAP_TEST_TIER sets it too.",
    )


def is_component(item: pytest.Item) -> bool:
    """Whether `item` belongs to the component tier."""
    if any(item.get_closest_marker(name) is not None for name in COMPONENT_MARKERS):
        return True
    if _COMPONENT_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgres" in callspec.params.values()


def _tier(config: pytest.Config) -> str:
    chosen = config.getoption("--tier") or os.environ.get("AGENTMAP_TEST_TIER", "")
    if chosen:
        if chosen not in TIERS:
            raise pytest.UsageError(f"AGENTMAP_TEST_TIER={chosen!r}: use one of {', '.join(TIERS)}")
        return str(chosen)
    named = any("::" in arg or arg.split("::")[0].endswith(".py") for arg in config.args)
    return "all" if named else "fast"


FULL_MATRIX = "AGENTMAP_TEST_FULL_MATRIX"
"""Set to 1: every combination of a `matrix` test runs (else a sample: `sampled`)."""


def sampled(items: list[pytest.Item]) -> list[pytest.Item]:
    """Of the combinations of one `matrix` test (its parametrized items, in collection order), a sample in which
    each value of each parameter appears at least once: an item is kept when it brings a value not yet seen."""
    seen: set[tuple[str, str]] = set()
    kept: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        values = {(name, repr(value)) for name, value in (callspec.params.items() if callspec else ())}
        if not values <= seen:
            seen |= values
            kept.append(item)
    return kept


def _matrix_sample(config: pytest.Config, items: list[pytest.Item]) -> set[pytest.Item]:
    """The items of `matrix` tests left out of this run (none when AGENTMAP_TEST_FULL_MATRIX=1, or when the
    command names a combination: `test_x[a-b]`)."""
    if os.environ.get(FULL_MATRIX, "") == "1" or any("[" in arg for arg in config.args):
        return set()
    tests: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker("matrix") is not None:
            tests.setdefault((item.path.as_posix(), getattr(item, "originalname", item.name)), []).append(item)
    left_out: set[pytest.Item] = set()
    for combinations in tests.values():
        left_out |= set(combinations) - set(sampled(combinations))
    return left_out


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the component tier's tests, and keep only the chosen tier's and the sample of each `matrix` test."""
    tier = _tier(config)
    left_out = _matrix_sample(config, items)
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if item in left_out:
            dropped.append(item)
            continue
        component = is_component(item)
        if component:
            item.add_marker("component")
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("ray"))  # on one worker: one local Ray for the run
        (keep if tier == "all" or component == (tier == "component") else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


class _XdistGroups:
    """xdist's `--dist loadgroup` (pyproject.toml's addopts) sends the tests of one `xdist_group` to one worker by
    the group name it appends to their node ids in each worker; with pytest 9 its `item._nodeid` no longer sets
    the id (pytest keeps it in `item._id`), so without this every test would be a group of its own. Appends it
    where xdist's own hook did not (after it: `trylast`)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not config.getoption("loadgroup", False):
            return
        from _pytest.nodeid import NodeId

        for item in items:
            names = sorted(
                {
                    str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")
                }
            )
            if (
                names
                and not item.nodeid.endswith("@" + "_".join(names))
                and isinstance(getattr(item, "_id", None), NodeId)
            ):
                item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def pytest_configure(config: pytest.Config) -> None:
    # A test run started in the background of a script (`cmd &` without job control) ignores Ctrl-C, and so
    # would every command a test starts: the tests that press Ctrl-C (serve, studio, batch) need it heard.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(_XdistGroups(), "agentmap-xdist-groups")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`pytest -n auto`: a worker per core and up to four more.

    Much of the suite waits on the real processes it starts (servers, PostgreSQL, browsers, killed and restarted
    commands) rather than computing: on a busy two-core machine four workers took 355 s where two took 405 s.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + min(cores, 4)


ROOT = Path(__file__).resolve().parents[1]
CHECKOUT_STATE = ROOT / ".agentmap"
"""AgentMap's state folder in the checkout: tests never write there."""
_STATE = "AGENTMAP_STATE_DIR"
_CHECKOUT_KEY = pytest.StashKey[dict[str, tuple[int, int]]]()


@pytest.fixture(scope="session", autouse=True)
def _session_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """AgentMap's own files of what a session or module shares (servers, compiled apps) in a folder of the session."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_STATE, str(tmp_path_factory.mktemp("agentmap-state")))
        yield


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's AgentMap files in `tmp_path/.agentmap` (where a test working in `tmp_path` finds them anyway)."""
    monkeypatch.setenv(_STATE, str(tmp_path / ".agentmap"))


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under `folder` with its size and modification time (nothing when it does not exist)."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()
    }


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist) keeps the record
        session.config.stash[_CHECKOUT_KEY] = files_of(CHECKOUT_STATE)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when a test wrote into the checkout's `.agentmap/` (a command run with the checkout as its
    working folder and without the test's `AGENTMAP_STATE_DIR`: a helper that dropped it from the environment)."""
    before = session.config.stash.get(_CHECKOUT_KEY, None)
    if before is None:
        return
    after = files_of(CHECKOUT_STATE)
    written = sorted(name for name in after if after[name] != before.get(name))
    if written:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"tests wrote into the checkout's {CHECKOUT_STATE}: {', '.join(written)} (see tests/conftest.py)"
        if reporter is not None:
            reporter.write_line(f"ERROR: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def write_csv(tmp_path: Path) -> WriteCsv:
    """`write_csv(text, name="workflow.csv")` writes dedented text under tmp_path and returns its path."""

    def write(text: str, name: str = "workflow.csv") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write


@functools.cache
def _pg() -> Any:
    """tests/runtime/pg.py, loaded by path (the test folders are not packages)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("agentmap_test_pg", Path(__file__).parent / "runtime" / "pg.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_folder(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: the session's, or with xdist the controller's, which holds each
    worker's own (`popen-gw0`, ...)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


_POSTGRES_RECORD = "postgres.url"
"""In the run's folder: the URL of the run's PostgreSQL server, written by the process that started it."""


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of the one real PostgreSQL server of this run (see tests/runtime/pg.py): the first test process
    (xdist worker) that needs it starts it, the others use it, and the run stops it at its end
    (`pytest_unconfigure`). Each test gets a database of its own on it (`postgres_url`).

    Skips where the server binaries are missing (fails under CI).
    """
    import fcntl

    from components import require

    bin_dir = _pg().binaries()
    require(bin_dir is not None, _pg().REASON)
    folder = _run_folder(tmp_path_factory)
    with (folder / "postgres.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process starts it; the others wait, then read its URL
        record = folder / _POSTGRES_RECORD
        if not record.exists():
            record.write_text(_pg().start(bin_dir), encoding="utf-8")
        return record.read_text(encoding="utf-8")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the run's PostgreSQL server (in the controller, or the one process of a run without xdist)."""
    factory = getattr(config, "_tmp_path_factory", None)  # pytest's own, as xdist reads it
    base = getattr(factory, "_basetemp", None)  # None: this process made no temporary folder, so no server
    if hasattr(config, "workerinput") or not isinstance(base, Path):
        return
    record = base / _POSTGRES_RECORD
    try:
        url = record.read_text(encoding="utf-8")
    except FileNotFoundError:  # no server; or pytest's clean-up in another run here took this run's old folder
        return
    _pg().stop(url)
    record.unlink(missing_ok=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database on the session's PostgreSQL server; this process's pool of it closed after the test
    (the server allows 100 connections, and each database's pool would otherwise keep one for the whole run)."""
    from agentmap.runtime.checkpoint import close_pools

    url = str(_pg().new_database(postgres_server))
    yield url
    close_pools(url)


@pytest.fixture
def postgres_with_outage() -> Iterator[tuple[str, Callable[[float], None]]]:
    """A PostgreSQL server of this test's own: a database URL, and `outage(seconds)` that stops the server (every
    connection cut) and starts it again after `seconds` (the session's server is shared, so it is never stopped)."""
    from components import require

    pg = _pg()
    bin_dir = pg.binaries()
    require(bin_dir is not None, pg.REASON)
    with pg.server(bin_dir) as url:
        yield str(pg.new_database(url)), functools.partial(pg.outage, url)


class _LocalRay:
    """The local Ray (2 CPUs) of this test process: started by the first test that asks for it, stopped after the
    last of the run of tests that do (`pytest_runtest_teardown`). Every test using it runs on the same xdist worker
    (the `ray` xdist_group, set in `pytest_collection_modifyitems`), one after another, so a run starts one; idle,
    its processes would take about a seventh of a core for the rest of the worker's tests."""

    def __init__(self) -> None:
        self.ray: Any = None

    def start(self) -> Any:
        if self.ray is None:
            import logging

            from components import require

            try:
                import ray
            except ImportError:
                require(False, 'Ray is not installed (pip install "agentmap[ray]")')
            try:
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            except Exception as exc:
                require(False, f"a local Ray cannot start here: {exc}")
            self.ray = ray
        return self.ray

    def stop(self) -> None:
        if self.ray is not None:
            self.ray.shutdown()
            self.ray = None


_RAY = _LocalRay()


@pytest.fixture
def ray_session() -> Any:
    """The `ray` module, with this test process's local Ray running (`_LocalRay`)."""
    return _RAY.start()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the local Ray once the next test does not use it (after the fixtures' own teardown: `trylast`)."""
    if nextitem is None or "ray_session" not in getattr(nextitem, "fixturenames", ()):
        _RAY.stop()


@pytest.fixture
def ray_cluster(ray_session: Any) -> RayCluster:
    """The run's local Ray as a cluster commands join (`components.RayCluster`)."""
    from components import RayCluster

    return RayCluster(ray_session)


@pytest.fixture
def replicas() -> Iterator[list[Any]]:
    """The `agentmap serve` processes a test starts (appended by the test), stopped when it ends."""
    started: list[Any] = []
    yield started
    for replica in started:
        replica.stop()


_CHARGE = '''
import os


def charge_card(amount: int) -> str:
    """Charge the card."""
    with open(os.environ["EFFECTS"], "a") as handle:
        handle.write(f"charge {amount}\\n")
    return f"charged {amount}"
'''


@pytest.fixture
def charge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workflow whose one `tool` node charges a card (`amount`): a line in `effects.txt` beside it."""
    (tmp_path / "tools.py").write_text(_CHARGE)
    (tmp_path / "charge.csv").write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Tool_Source\n"
        'g,Charge,tool,"{""tool"": ""charge_card""}",amount,result,tools.py\n'
    )
    monkeypatch.setenv("EFFECTS", str(tmp_path / "effects.txt"))
    return tmp_path / "charge.csv"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for a module's page tests, each opening its own page (`components.chromium`; a module
    needing other launch arguments defines its own)."""
    from components import chromium

    with chromium() as launched:
        yield launched
