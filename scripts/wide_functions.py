"""The functions of a tree that take 10 or more parameters (self / cls not counted), widest first, and their count:
`python3 scripts/wide_functions.py spectui` (Reshape IV's measure: at most 5 in spectui/)."""

import ast
import pathlib
import sys


def main() -> None:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "spectui")
    rows = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
                if len(names) >= 10:
                    rows.append((len(names), f"{path}:{node.lineno} {node.name}"))
    for count, where in sorted(rows, reverse=True):
        print(count, where)
    print("total", len(rows))


if __name__ == "__main__":
    main()
