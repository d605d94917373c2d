"""The evaluation's HTML report shows each conversation, every reply beside the findings about its turn."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agentmap.interface.eval_runner import run_eval
from agentmap.interface.evaluate import score_logs
from agentmap.interface.report import report_html

SCENARIOS = """scenario,turn,user,must_include,must_not_include
capital,1,What is the capital of France?,Paris,
capital,2,And of Spain?,Madrid,
"""


async def _agent(prompt: str, **_: Any) -> str:
    return {"What is the capital of France?": "Paris, of course.", "And of Spain?": "Lisbon, I think."}[prompt]


async def test_replies_stand_beside_their_findings(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.csv"
    scenarios.write_text(SCENARIOS, encoding="utf-8")
    await run_eval(scenarios, _agent, tmp_path / "logs", progress=False)
    page = report_html(score_logs(tmp_path / "logs"))
    conversation = page.split("<h2>Conversations</h2>", 1)[1]
    rows = re.findall(r'<tr class="(\w+)"><td>[^<]*</td><td class="text">([^<]*)</td><td>(.*?)</td></tr>', conversation)
    assert [(role, text) for role, text, _ in rows] == [
        ("user", "What is the capital of France?"),
        ("assistant", "Paris, of course."),
        ("user", "And of Spain?"),
        ("assistant", "Lisbon, I think."),
    ]
    assert rows[1][2] == "" and "Madrid" in rows[3][2]  # the finding sits beside the reply it is about
    assert "<details open>" in conversation and "<script" not in page
