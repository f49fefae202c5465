"""Run the compat scripts in one interpreter (``python run_scripts.py nn|torch OUT_DIR``):
each in its own folder under OUT_DIR, as nn (as written) or as PyTorch (the import line back
to ``import torch``); prints one JSON object, script name -> its RESULT (or its error)."""
import contextlib
import io
import json
import os
import pathlib
import re
import runpy
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent


def to_torch(source: str) -> str:
    out = re.sub(r"^import nn as torch$", "import torch", source, flags=re.M)
    return re.sub(r"\bnn\.nn\b", "torch.nn", out)


def main(mode, out_dir):
    results = {}
    for script in sorted((HERE / "scripts").glob("s*.py")):
        folder = pathlib.Path(out_dir) / mode / script.stem
        folder.mkdir(parents=True, exist_ok=True)
        source = script.read_text()
        path = folder / script.name
        path.write_text(to_torch(source) if mode == "torch" else source)
        captured = io.StringIO()
        here = os.getcwd()
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(captured):
                runpy.run_path(str(path), run_name="__main__")
            lines = [ln for ln in captured.getvalue().splitlines() if ln.startswith("RESULT ")]
            results[script.name] = (json.loads(lines[-1][7:]) if lines
                                    else {"error": "no RESULT line"})
        except BaseException:
            results[script.name] = {"error": traceback.format_exc()[-3000:]}
        finally:
            os.chdir(here)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
