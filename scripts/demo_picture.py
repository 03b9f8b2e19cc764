"""Regenerate docs/demo-report.png, the README's picture of the demo's report.

Run: .venv/bin/python scripts/demo_picture.py [--out docs/demo-report.png]

Runs ``tide demo`` in a temporary directory, keeps the top of its ``tide-demo.html`` (the
title, the cluster summary, the decisions per reason per hour and the first node's
panel: the node with the most decisions), and screenshots that with Debian's headless
chromium at 1100 px wide. The page itself is not changed: the picture leaves out the
contents list, the tables and the other nodes, which a README picture cannot show at a
readable size anyway.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1100, 1330


def excerpt(page: str) -> str:
    """The picture's page: ``page``'s head, title, summary, reason chart and first node."""
    head, body = page.split("<body>", 1)
    title = body[: body.index("<section id='summary'>")]
    summary = body[body.index("<section id='summary'>") :]
    summary = summary[: summary.index("</section>") + len("</section>")]
    reasons = body[body.index("<section id='reasons'>") :]
    reasons = reasons[: reasons.index("</figure>") + len("</figure>")] + "</section>"
    node = body[body.index("<section class='node'") :]
    node = node[: node.index("</figure>") + len("</figure>")] + "</section>"
    # the node's section starts a printed page; on screen it follows the chart
    return f"{head}<body>{title}{summary}{reasons}{node}</body></html>\n"


def main() -> None:
    """Run the demo, cut its report to the picture's sections and screenshot them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "demo-report.png")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("demo_picture: no chromium on PATH (Debian: apt-get install chromium)")
    tide = Path(sys.executable).with_name("tide")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(
            [str(tide), "demo", "--db", str(work / "tide-demo.db")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        picture = work / "picture.html"
        picture.write_text(excerpt((work / "tide-demo.html").read_text("utf-8")), "utf-8")
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={work / 'profile'}",
                f"--window-size={WIDTH},{HEIGHT}",
                f"--screenshot={args.out.resolve()}",
                picture.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
