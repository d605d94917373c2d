"""`agentmap eval run` and `agentmap eval score`: the run -> conversation log -> score pipeline
(csv_specs/evaluation.md).

`eval run SCENARIOS.csv` runs every scenario against an agent (`--agent`, `--workflow`, else
`ACTIVE_AGENT_PATH`) and writes one log per run plus `manifest.json` into `--out`; it exits 0 once every
run has its log, whatever the agent answered (an agent error or a timeout is recorded in the log and
fails at scoring). Running it again into the same folder skips the runs whose log is complete, except runs that
ended in agent_error or timeout, which run again (the failure may have been passing).

`eval score LOGS_DIR` scores the logs (agentmap/cli/eval_score.py): exit 0 when every run passes, 1 when some fail.

`eval diff BASE_DIR NEW_DIR` compares two scored folders (agentmap/cli/eval_diff.py): exit 1 on a regression.

Missing files and folders exit 3; mistakes in options or in the scenarios file exit 2; Ctrl-C exits 130.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli._common import ConfigOption, DebugOption, JsonOption, ensure_writable, load
from agentmap.cli.chat import AgentConfigOption, MemoryOption, load_agent, read_agent_config, run_interruptible
from agentmap.cli.eval_diff import diff_folders
from agentmap.cli.eval_score import SCENARIOS_HINT, existing_file, score_folder
from agentmap.cli.render import dump_json, set_json_output
from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap._cli_api import EvalRunSummary

__all__ = ["register", "run_scenarios"]

_DEFAULT_OUT = Path("eval_logs")


def run_scenarios(
    scenarios: Path,
    *,
    agent: str | None = None,
    workflow: str | None = None,
    out: Path | None = None,
    concurrency: int = 4,
    max_turns: int | None = None,
    timeout: float | None = None,
    runs: int = 1,
    resume: bool = True,
    user_model: str | None = None,
    memory: str | None = None,
    agent_config: str | None = None,
    json_output: bool = False,
    config: Path | None = None,
    debug: bool = False,
) -> int:
    """The `eval run` command: write one log per run; returns the exit code (0).

    Raises:
        WorkflowFileError: The scenarios file or the agent's file does not exist.
        ConfigError: Both `--agent` and `--workflow`, a bad `--timeout` or `--agent-config`, no agent.
        ScenarioError: A mistake in the scenarios file.
    """
    set_json_output(json_output)
    if agent is not None and workflow is not None:
        raise ConfigError(
            "give the agent once: --agent or --workflow, not both",
            code=ErrorCode.USAGE,
            hint="--agent takes a Python file, a module or a workflow; --workflow a workflow file",
        )
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, got {timeout:g}", code=ErrorCode.USAGE)
    existing_file(scenarios, "scenarios file", SCENARIOS_HINT)
    from agentmap._cli_api import load_scenarios

    names = {s.name for s in load_scenarios(scenarios)}  # mistakes in the file stop before the agent loads
    settings = load(config, debug)

    call_config = read_agent_config(agent_config)
    if workflow is not None:
        existing_file(
            Path(workflow.partition("::")[0]), "workflow", "pass a workflow file, e.g. graphs/llm_offline.csv"
        )
        from agentmap import CompileOptions
        from agentmap._cli_api import agent_for

        run_agent: Any = agent_for(workflow, options=CompileOptions.from_settings(settings))
    else:
        run_agent = load_agent(agent, settings, source="--agent")
    folder = out if out is not None else _DEFAULT_OUT / scenarios.stem
    ensure_writable(folder, "the logs folder", folder=True)

    from agentmap._cli_api import run_eval

    summary = run_interruptible(
        run_eval(
            scenarios,
            run_agent,
            folder,
            concurrency=concurrency,
            max_turns=max_turns,
            timeout=timeout,
            runs=runs,
            memory=memory,
            config=call_config,
            resume=resume,
            user_model=user_model,
            model_settings=settings.agent_settings(),
        ),
        lambda: (
            f"Ctrl-C stopped the evaluation; finished runs have their logs in {folder}. "
            "Run the same command again to resume: complete logs are skipped (agent_error and timeout runs run again)."
        ),
    )
    _print_run(summary, len(names), json_output)
    return 0


def _print_run(summary: EvalRunSummary, scenarios: int, json_output: bool) -> None:
    counts = summary.counts()
    if json_output:
        dump_json(
            {
                "out_dir": str(summary.out_dir),
                "manifest": str(summary.manifest),
                "exit_code": 0,
                "counts": counts,
                "runs": [
                    {
                        "scenario": o.scenario,
                        "run": o.run,
                        "log": str(o.log),
                        "stop_reason": o.stop_reason,
                        "skipped": o.skipped,
                    }
                    for o in summary.outcomes
                ],
            }
        )
        return
    total = len(summary.outcomes)
    skipped = counts.pop("skipped", 0)
    parts = [f"{n} {reason}" for reason, n in sorted(counts.items())]
    parts += [f"{skipped} skipped (complete logs already there)"] if skipped else []
    lines = [
        f"{total} run{'s' if total != 1 else ''} of {scenarios} scenario{'s' if scenarios != 1 else ''}: "
        + ("; ".join(parts) or "nothing to run"),
        f"Logs and manifest in {summary.out_dir}. Score them: agentmap eval score {summary.out_dir}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add the `agentmap eval` group (`eval run`, `eval score`, `eval diff`) to `app`."""
    group = typer.Typer(
        help="Run scenarios against an agent into conversation logs, score the logs, and compare two versions.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.add_typer(group, name="eval")

    @group.command("run")
    def run(
        scenarios: Annotated[
            Path,
            typer.Argument(
                metavar="SCENARIOS.csv",
                help="The scenarios (.csv, .xlsx or .jsonl): one row per user turn, or per simulated user (goal).",
            ),
        ],
        agent: Annotated[
            str | None,
            typer.Option(
                "--agent",
                help="A Python file or module exposing run_agent, or a workflow (default: $ACTIVE_AGENT_PATH).",
                show_default=False,
            ),
        ] = None,
        workflow: Annotated[
            str | None,
            typer.Option("--workflow", metavar="FILE[::GRAPH]", help="Evaluate this workflow.", show_default=False),
        ] = None,
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                "-o",
                help="Folder for the logs and manifest.json (default: eval_logs/<SCENARIOS stem>).",
                show_default=False,
                file_okay=False,
            ),
        ] = None,
        concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Runs at once.")] = 4,
        max_turns: Annotated[
            int | None,
            typer.Option("--max-turns", min=1, help="The most user turns per run.", show_default=False),
        ] = None,
        timeout: Annotated[
            float | None,
            typer.Option(
                "--timeout", help="Seconds the agent has for each reply (default: no limit).", show_default=False
            ),
        ] = None,
        runs: Annotated[
            int,
            typer.Option("--k", "--runs", "-k", min=1, help="Independent runs (trials) of every scenario, for pass^k."),
        ] = 1,
        resume: Annotated[
            bool,
            typer.Option(
                "--resume/--no-resume",
                help="Skip runs whose log is already complete in --out (agent_error and timeout runs run again).",
            ),
        ] = True,
        user_model: Annotated[
            str | None,
            typer.Option(
                "--user-model",
                metavar="MODEL",
                help="The model playing simulated users (provider:model; default: offline, a scripted policy).",
                show_default=False,
            ),
        ] = None,
        memory: MemoryOption = None,
        agent_config: AgentConfigOption = None,
        json_output: JsonOption = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Run every scenario against an agent; write one conversation log per run (exit 0 when all are written)."""
        raise typer.Exit(
            run_scenarios(
                scenarios,
                agent=agent,
                workflow=workflow,
                out=out,
                concurrency=concurrency,
                max_turns=max_turns,
                timeout=timeout,
                runs=runs,
                resume=resume,
                user_model=user_model,
                memory=memory,
                agent_config=agent_config,
                json_output=json_output,
                config=config,
                debug=debug,
            )
        )

    @group.command("score")
    def score(
        logs_dir: Annotated[
            Path,
            typer.Argument(
                metavar="LOGS_DIR", help="The folder `eval run` wrote, or an `agentmap batch` output table."
            ),
        ],
        expectations: Annotated[
            Path | None,
            typer.Option(
                "--expectations",
                "-e",
                metavar="SCENARIOS.csv",
                help="Take the expectations from this scenarios CSV instead of the manifest.",
                show_default=False,
            ),
        ] = None,
        json_output: JsonOption = False,
        report: Annotated[
            Path | None,
            typer.Option(
                "--report", help="Also write a self-contained HTML report here.", show_default=False, dir_okay=False
            ),
        ] = None,
        judge: Annotated[
            str | None,
            typer.Option(
                "--judge",
                metavar="MODEL",
                help="Also score each conversation with an LLM judge (provider:model); off by default.",
                show_default=False,
            ),
        ] = None,
        rubric: Annotated[
            Path | None,
            typer.Option("--rubric", help="The judge's rubric (text or Markdown file).", show_default=False),
        ] = None,
        judge_threshold: Annotated[
            int | None,
            typer.Option(
                "--judge-threshold",
                metavar="N",
                help="Lowest passing judge score, 1-5 (default 3).",
                show_default=False,
            ),
        ] = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Score conversation logs; exit 0 when every run passes, 1 when some fail."""
        raise typer.Exit(
            score_folder(
                logs_dir,
                expectations=expectations,
                json_output=json_output,
                report=report,
                judge=judge,
                rubric=rubric,
                judge_threshold=judge_threshold,
                config=config,
                debug=debug,
            )
        )

    @group.command("diff")
    def diff(
        base_dir: Annotated[Path, typer.Argument(metavar="BASE_DIR", help="The folder of the version compared to.")],
        new_dir: Annotated[Path, typer.Argument(metavar="NEW_DIR", help="The folder of the new version.")],
        junit: Annotated[
            Path | None,
            typer.Option("--junit", help="Also write a JUnit XML report here.", show_default=False, dir_okay=False),
        ] = None,
        html: Annotated[
            Path | None,
            typer.Option(
                "--html",
                help="Also write an HTML page of both runs side by side (conversations, trajectories, failed checks).",
                show_default=False,
                dir_okay=False,
            ),
        ] = None,
        json_output: JsonOption = False,
    ) -> None:
        """Compare two evaluation folders; exit 1 when NEW's pass^k is below BASE's 95% interval."""
        raise typer.Exit(diff_folders(base_dir, new_dir, junit=junit, html=html, json_output=json_output))
