"""``voicetrace doctor``: is each component of the embedded default installed?"""

from __future__ import annotations

from voicetrace.cli.app import app, console
from voicetrace.errors import EXIT_VIOLATION, UserError


@app.command()
def doctor() -> None:
    """List each component of the embedded default (found or missing, version, path)."""
    from rich.table import Table

    from voicetrace.components import embedded_components

    table = Table(title="voicetrace components (embedded default)")
    for column in ("component", "status", "version", "path / what to do"):
        table.add_column(column)
    missing_required = []
    for comp in embedded_components():
        status = "[green]found[/]" if comp.found else ("[red]missing[/]" if comp.required else "[yellow]missing[/]")
        table.add_row(comp.name, status, comp.version or "-", str(comp.path) if comp.found else comp.hint)
        if comp.required and not comp.found:
            missing_required.append(comp.name)
    console.print(table)
    if missing_required:
        raise UserError(f"the embedded default cannot run, missing: {', '.join(missing_required)}. "
                        "Run `make install`.", EXIT_VIOLATION)
    console.print("[green]ready:[/] the embedded default can run")
