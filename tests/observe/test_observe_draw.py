"""Pictures of graphs and runs: what the SVG shows, the notebook views, and the shipped notebook offline."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import components
import pytest
from timing import scaled

import agentmap
from agentmap.observe import draw_graph, draw_run, to_png
from agentmap.observe.outputs import to_dot

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"


def _node_classes(svg: str) -> dict[str, str]:
    return {name: style for style, name in re.findall(r'<g class="node (\w+)" data-node="([^"]+)"', svg)}


def test_a_graph_drawing_has_every_node_and_edge() -> None:
    app = agentmap.compile(GRAPHS / "branching.csv")
    svg = draw_graph(app)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert set(_node_classes(svg)) == {"__start__", "Check", "Approve", "Reject", "Report", "__end__"}
    assert svg.count('class="edge') == 6 and ">ok</text>" in svg and ">fail</text>" in svg
    assert app.draw() == svg


def test_a_run_drawing_marks_the_path_failures_and_parallel_steps(tmp_path: Path) -> None:
    app = agentmap.compile(GRAPHS / "parallel.csv")
    result = app.invoke({"city": "Lisbon"})
    svg = result.draw(tmp_path / "run.svg")
    assert (tmp_path / "run.svg").read_text(encoding="utf-8") == svg == draw_run(app, result)
    assert set(_node_classes(svg).values()) == {"terminal", "taken"}
    assert svg.count(">∥</text>") == 3 and "ran in parallel" in svg  # the three branches share step 2
    assert svg.count('class="edge taken"') == 8  # every edge of the graph was taken

    @agentmap.agent("observe_draw_boom")
    class Boom(agentmap.BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            raise ValueError("nope")

    csv = tmp_path / "fail.csv"
    csv.write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Success_Next,Failure_Next\n"
        "G,Try,observe_draw_boom,x,y,Good,Bad\nG,Good,echo,y,out,,\nG,Bad,echo,errors,out,,\n",
        encoding="utf-8",
    )
    failed = agentmap.compile(csv).invoke({"x": 1})
    classes = _node_classes(failed.draw())
    assert classes["Try"] == "failed" and classes["Good"] == "skipped" and classes["Bad"] == "taken"
    assert "✗ " in failed.draw() and "run succeeded" in failed.draw()  # Bad handles the failure of Try


def test_png_and_dot() -> None:
    app = agentmap.compile(GRAPHS / "hello_world.csv")
    assert to_png(draw_graph(app))[:8] == b"\x89PNG\r\n\x1a\n"
    dot = to_dot(app, app.invoke({"name": "Ada"}))
    assert dot.startswith('digraph "HelloWorld"') and '"Greet" -> "Finish" [color="#2e8b3e", penwidth=2.5];' in dot


def test_notebook_views() -> None:
    app = agentmap.compile(GRAPHS / "hello_world.csv")
    bundle = app._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and "Greet --> Finish" in bundle["text/vnd.mermaid"]
    result = app.invoke({"name": "Ada"})
    view = result._repr_mimebundle_()
    assert 'class="node taken" data-node="Greet"' in view["image/svg+xml"] and "<td>Greet</td>" in view["text/html"]
    frame = result.summary_frame()
    assert list(frame["name"]) == ["Greet", "Finish"]


@pytest.mark.slow
def test_the_shipped_notebook_draws_offline(tmp_path: Path) -> None:
    """Executed by a real kernel whose every connection off this machine is refused."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import socket\n"
        "_connect = socket.socket.connect\n"
        "def _local_only(self, address):\n"
        "    host = address[0] if isinstance(address, tuple) else address\n"
        "    if isinstance(host, str) and host not in ('127.0.0.1', 'localhost', '::1') and '/' not in host:\n"
        "        raise OSError('network blocked in this test: ' + str(host))\n"
        "    return _connect(self, address)\n"
        "socket.socket.connect = _local_only\n",
        encoding="utf-8",
    )
    notebook = nbformat.read(ROOT / "examples" / "notebook.ipynb", as_version=4)
    probe = (
        "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
        "except OSError as e:\n    print(e)"
    )
    notebook.cells.append(nbformat.v4.new_code_cell(probe))  # proves the kernel has no network
    env_path = f"{tmp_path}:{':'.join(p for p in sys.path if p)}"
    client = nbclient.NotebookClient(
        notebook,
        timeout=round(scaled(120)),
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "examples")}},
    )
    import os

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env_path
    try:
        client.execute()
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    svgs = [
        output["data"]["image/svg+xml"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/svg+xml" in output.get("data", {})
    ]
    assert len(svgs) == 2 and all("<rect" in svg and "data-node=" in svg for svg in svgs)
    assert 'class="node taken"' in svgs[1]
    assert "network blocked in this test" in notebook.cells[-1].outputs[0]["text"]
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == [], json.dumps(errors)[:2000]


def test_a_picture_drawn_while_another_is_being_laid_out_waits_its_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """grandalf orders vertices with a class-level counter; the studio and the server draw from threads."""
    import threading

    from grandalf import graphs

    app = agentmap.compile(GRAPHS / "branching.csv")
    expected = draw_graph(app)
    inside, second_done = threading.Event(), threading.Event()
    original = graphs.Vertex.e_out

    def e_out(self: Any) -> Any:  # the first layout pauses in the middle of ordering its vertices
        if threading.current_thread().name == "first" and not inside.is_set():
            inside.set()
            second_done.wait(0.3)
        return original(self)

    monkeypatch.setattr(graphs.Vertex, "e_out", e_out)
    drawn: dict[str, str] = {}

    def first() -> None:
        try:
            drawn["first"] = draw_graph(app)
        except Exception as exc:  # kept: an exception in a thread would not fail the test
            drawn["first"] = repr(exc)

    thread = threading.Thread(target=first, name="first")
    thread.start()
    assert inside.wait(scaled(10))
    drawn["second"] = draw_graph(app)
    second_done.set()
    thread.join(scaled(10))
    assert drawn == {"first": expected, "second": expected}


def _texts(svg: str) -> list[tuple[float, float, str, str]]:
    """(x, y, text-anchor, text) of every text element."""
    found = []
    for attributes, text in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg):
        x, y = (float(re.search(rf'\b{axis}="([-0-9.]+)"', attributes).group(1)) for axis in "xy")  # type: ignore[union-attr]
        anchor = re.search(r'text-anchor="(\w+)"', attributes)
        found.append((x, y, anchor.group(1) if anchor else "start", text))
    return found


def _pictures() -> list[tuple[str, str]]:
    pictures = [(path.stem, draw_graph(agentmap.compile(path))) for path in sorted(GRAPHS.glob("*.csv"))]
    approval = agentmap.compile(GRAPHS / "approval.csv", checkpointer="memory")
    paused = approval.invoke({"request": "a laptop"}, {"configurable": {"thread_id": "t"}})
    pictures.append(("approval, paused", draw_run(approval, paused)))
    router = agentmap.compile(GRAPHS / "custom_router.csv")
    pictures.append(("custom_router, run", draw_run(router, router.invoke({"amount": 250}))))
    return pictures


def test_everything_drawn_lies_on_the_canvas() -> None:
    for name, svg in _pictures():
        width, height = (float(v) for v in re.search(r'<svg [^>]*width="([0-9.]+)" height="([0-9.]+)"', svg).groups())  # type: ignore[union-attr]
        for points in re.findall(r'points="([^"]+)"', svg):
            for point in points.split():
                x, y = map(float, point.split(","))
                assert 0 <= x <= width and 0 <= y <= height, (name, point, width, height)
        for x, y, anchor, text in _texts(svg):
            half = len(text) * 6.0 / (2 if anchor == "middle" else 1)
            left, right = (
                (x - half, x + half) if anchor == "middle" else (x - half, x) if anchor == "end" else (x, x + half)
            )
            assert left >= 0 and right <= width and 0 <= y <= height, (name, text, x, width)


def test_every_character_drawn_is_in_the_pictures_font() -> None:
    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    components.require(font.is_file(), f"{font} is missing (Debian's fonts-dejavu-core)")
    from fontTools.ttLib import TTFont  # type: ignore[import-untyped]

    glyphs = TTFont(font).getBestCmap()
    for name, svg in _pictures():
        for *_, text in _texts(svg):
            missing = {c for c in html.unescape(text) if ord(c) not in glyphs}
            assert not missing, (name, text, missing)
