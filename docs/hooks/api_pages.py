"""MkDocs hook: one API reference page per room of the package, generated from the docstrings.

A room is a subpackage of ``textcause`` (``estimators``, ``runs``, ...) or a top-level module. Its
page documents, through mkdocstrings, every module of that room that declares ``__all__`` (the
room's public surface), so a room that gains or loses an ``__all__`` is picked up without editing
``mkdocs.yml``. Each function or class listed in an ``__all__`` must have a docstring: one without
is logged as a warning, which ``mkdocs build --strict`` turns into a failure. A constant listed there
is shown with its value; a name that does not resolve at all is a warning too.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

from mkdocs.structure.files import File

PACKAGE = "textcause"
ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("mkdocs.plugins.textcause.api_pages")


def _declares_all(path: Path) -> list[str] | None:
    """The names of a module's literal ``__all__`` (a list or tuple of strings, ``*NAME`` of a literal tuple
    assigned earlier in the module included), or None when it declares none."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    literals: dict[str, ast.expr] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if "__all__" in targets:
            names: list[str] = []
            for element in getattr(node.value, "elts", []):
                if isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                    element = literals.get(element.value.id, element)
                    names += [e.value for e in getattr(element, "elts", []) if isinstance(e, ast.Constant)]
                elif isinstance(element, ast.Constant):
                    names.append(element.value)
            return names
        literals.update(dict.fromkeys(targets, node.value))
    return None


def _path(module: str) -> Path:
    path = ROOT / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def rooms() -> dict[str, list[str]]:
    """Room name -> the dotted names of its modules that declare ``__all__``, in a stable order."""
    out: dict[str, list[str]] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        if _declares_all(path) is None:
            continue
        module = _module_name(path)
        parts = module.split(".")
        room = "textcause" if len(parts) == 1 else parts[1]
        out.setdefault(room, []).append(module)
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != "textcause", kv[0])))


def lazy_exports() -> dict[str, str]:
    """The top-level package's lazy exports: name -> the dotted path its ``__getattr__`` loads it from."""
    tree = ast.parse((ROOT / PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    getattr_def = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"), None)
    if getattr_def is None:
        return {}
    found: dict[str, str] = {}
    whole_modules: list[str] = []
    for node in ast.walk(getattr_def):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.update({alias.name: f"{node.module}.{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            whole_modules += [alias.name for alias in node.names]
    for name in _declares_all(ROOT / PACKAGE / "__init__.py") or []:
        if name not in found and not name.startswith("__") and whole_modules:
            found[name] = f"{whole_modules[0]}.{name}"
    return found


def _page(room: str, modules: list[str]) -> str:
    title = "textcause (top level)" if room == "textcause" else f"textcause.{room}"
    lines = [
        f"# {title}",
        "",
        "Generated from the docstrings of every module of this room that declares `__all__`.",
        "",
    ]
    for module in modules:
        lines += [f"::: {module}", ""]
    if room == PACKAGE and (lazy := lazy_exports()):
        documented = {f"{m}.{n}" for ms in rooms().values() for m in ms for n in _declares_all(_path(m)) or []}
        lines += ["## Loaded on first use", ""]
        lines += [f"- [`{name}`][{dotted}]" for name, dotted in lazy.items() if dotted in documented]
        lines.append("")
        for dotted in (d for d in lazy.values() if d not in documented):
            lines += [f"::: {dotted}", "    options:", "      heading_level: 3", ""]
    return "\n".join(lines)


def on_config(config, **kwargs):
    nav = config.get("nav")
    if nav is not None:
        nav.append({"API reference": [f"api/{room}.md" for room in rooms()]})
    return config


def on_files(files, config, **kwargs):
    for room, modules in rooms().items():
        files.append(File.generated(config, f"api/{room}.md", content=_page(room, modules)))
    return files


def on_post_build(config, **kwargs):
    """Every name of every ``__all__`` resolves and has a docstring (griffe, the loader mkdocstrings uses)."""
    import griffe

    package = griffe.load(PACKAGE, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    for modules in rooms().values():
        for module in modules:
            obj = package if module == PACKAGE else package[module.removeprefix(PACKAGE + ".")]
            for name in _declares_all(_path(module)) or []:
                if name.startswith("__"):
                    continue
                try:
                    member = obj[name]
                    kind, docstring = member.kind, member.docstring
                except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                    if module != PACKAGE:  # the top level's lazy exports are documented where they live
                        log.warning("%s.%s is in __all__ but does not resolve", module, name)
                    continue
                if kind in (griffe.Kind.FUNCTION, griffe.Kind.CLASS) and not (docstring and docstring.value.strip()):
                    log.warning("%s.%s is in __all__ but has no docstring", module, name)
