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

PACKAGE = "textcause"
ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("mkdocs.plugins.textcause.api_pages")


def _literal_names(node: ast.expr, literals: dict[str, ast.expr]) -> list[str]:
    """The strings a literal expression lists: a list / tuple / set (``*NAME`` of another literal
    included), a dict's keys, a module-level NAME bound to one, or ``sorted(...)`` / ``list(...)`` of one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
        names = _literal_names(node.args[0], literals)
        return sorted(names) if node.func.id == "sorted" else names
    if isinstance(node, ast.Name):
        return _literal_names(literals[node.id], literals) if node.id in literals else []
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant)]
    names: list[str] = []
    for element in getattr(node, "elts", []):
        if isinstance(element, ast.Starred):
            names += _literal_names(element.value, literals)
        elif isinstance(element, ast.Constant):
            names.append(element.value)
    return names


def _module_literals(tree: ast.Module) -> dict[str, ast.expr]:
    return {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}


def _declares_all(path: Path) -> list[str] | None:
    """The names of a module's ``__all__`` read without importing it, or None when it declares none."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    literals = _module_literals(tree)
    return _literal_names(literals["__all__"], literals) if "__all__" in literals else None


def homes(module: str) -> dict[str, str]:
    """Each name of a module's ``__all__`` -> the dotted path it is documented at: the module's own, or,
    for a name the package loads lazily from a submodule (a ``{name: "submodule"}`` dict literal read
    by ``__getattr__``), the submodule's."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    literals = _module_literals(tree)
    bound: set[str] = set(literals)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    lazy: dict[str, str] = {}
    package_dir = _path(module).parent if _path(module).name == "__init__.py" else None
    for node in tree.body:  # a name imported from a submodule of the same name: document the object
        if isinstance(node, ast.ImportFrom) and node.module and package_dir is not None:
            for alias in node.names:
                name = alias.asname or alias.name
                if (package_dir / f"{name}.py").exists() or (package_dir / name).is_dir():
                    bound.discard(name)
                    lazy[name] = node.module.removeprefix(module + ".")
    for value in literals.values():
        if isinstance(value, ast.Dict) and all(
            isinstance(v, ast.Constant) and isinstance(v.value, str) for v in value.values
        ):
            lazy.update({k.value: v.value for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant)})
    return {
        name: f"{module}.{lazy[name]}.{name}" if name not in bound and name in lazy else f"{module}.{name}"
        for name in _declares_all(_path(module)) or []
    }


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
        where = homes(module)
        lazy = [dotted for name, dotted in where.items() if dotted != f"{module}.{name}"]
        if not lazy:
            lines += [f"::: {module}", ""]
            continue
        own = [name for name, dotted in where.items() if dotted == f"{module}.{name}" and not name.startswith("__")]
        lines += [f"::: {module}", "    options:", f"      members: {own if own else False}", ""]
        for dotted in lazy:
            lines += [f"::: {dotted}", "    options:", "      heading_level: 3", "      show_root_full_path: false", ""]
    if room == PACKAGE and (lazy := lazy_exports()):
        documented = {d for ms in rooms().values() for m in ms for d in homes(m).values()}
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
    from mkdocs.structure.files import File

    for room, modules in rooms().items():
        files.append(File.generated(config, f"api/{room}.md", content=_page(room, modules)))
    return files


def on_post_build(config, **kwargs):
    """Every name of every ``__all__`` resolves and has a docstring (griffe, the loader mkdocstrings uses)."""
    import griffe

    package = griffe.load(PACKAGE, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    for modules in rooms().values():
        for module in modules:
            for name, dotted in homes(module).items():
                if name.startswith("__"):
                    continue
                try:
                    member = package if dotted == PACKAGE else package[dotted.removeprefix(PACKAGE + ".")]
                    kind, docstring = member.kind, member.docstring
                except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                    if module != PACKAGE:  # the top level's lazy exports are documented where they live
                        log.warning("%s.%s is in __all__ but does not resolve", module, name)
                    continue
                if kind in (griffe.Kind.FUNCTION, griffe.Kind.CLASS) and not (docstring and docstring.value.strip()):
                    log.warning("%s.%s is in __all__ but has no docstring", module, name)
