"""Caches for ansible-playbook's templating: each template compiles once, each filter or test loads once.

ansible-core 2.19 compiles a variable's template (lexer, parser, code generator, Python compile) every time
the variable is resolved, and a role variable is resolved again for every host and every task that names it;
each resolution also gets a fresh Jinja environment whose filters and tests are looked up through the plugin
loader (file system checks) again. On a 16-node rack re-run that was most of ansible-playbook's time spent
judging `when` conditions (py-spy). Both are pure functions of their input within one ansible-playbook run:
the Python code Jinja generates depends only on the source and on the settings that shape lexing and code
generation, and a filter name resolves to the same plugin. So this keeps each code object per (source, those
settings) and builds templates from it as Jinja's from_string would, and lets every environment share one
table of the filters and tests already resolved. Workers forked later inherit both. Written against
ansible-core 2.19 and Jinja 3.1; where the internals it names are missing, install() does nothing.
"""

from __future__ import annotations

import threading
from types import CodeType
from typing import Any

from jinja2.environment import TemplateExpression

try:
    from ansible._internal._templating._jinja_bits import (
        _TEMPLATE_OVERRIDE_FIELD_NAMES,
        AnsibleEnvironment,
        _TemplateCompileContext,
    )
    from ansible._internal._templating._jinja_plugins import JinjaPluginIntercept
except ImportError:  # pragma: no cover - only on an ansible-core other than the pinned one
    AnsibleEnvironment = None

# Bounded so a play that templates many one-off strings cannot grow ansible-playbook without limit.
_MAX_ENTRIES = 20000
_compiled: dict[tuple[Any, ...], CodeType] = {}
# The key an expression being compiled for the first time is stored under (compile_expression parses it
# into a node tree, then compiles the tree: the tree has no source to key on).
_expression = threading.local()
# Resolved filters and tests per plugin type, shared by every environment's JinjaPluginIntercept.
_resolved_plugins: dict[tuple[str, int], dict[str, Any]] = {}


def _key(environment: Any, source: str, name: Any, filename: Any, defer_init: bool) -> tuple[Any, ...] | None:
    """What the generated code depends on besides the source; None where this cache must not answer."""
    if environment._debuggable_template_source or not isinstance(environment.autoescape, bool):
        return None
    context = _TemplateCompileContext.current(optional=True)
    return (
        str.__str__(source),
        name,
        filename,
        defer_init,
        context.escape_backslashes if context is not None else None,
        type(environment),
        tuple(getattr(environment, field) for field in _TEMPLATE_OVERRIDE_FIELD_NAMES),
        environment.optimized,
        environment.is_async,
        environment.autoescape,
        environment.finalize,
        tuple(environment.extensions),
    )


def _remember(key: tuple[Any, ...], code: CodeType) -> None:
    if len(_compiled) < _MAX_ENTRIES:
        _compiled[key] = code


def install() -> None:
    """Install both caches into ansible-core's template engine (once per process)."""
    if AnsibleEnvironment is None or getattr(AnsibleEnvironment, "_gpucluster_caches", False):
        return
    original_compile = AnsibleEnvironment.compile
    original_compile_expression = AnsibleEnvironment.compile_expression
    original_intercept_init = JinjaPluginIntercept.__init__

    def compile(  # noqa: PLR0917 - the signature of the Jinja method it stands in for
        self: Any,
        source: Any,
        name: Any = None,
        filename: Any = None,
        raw: bool = False,
        defer_init: bool = False,
    ) -> Any:
        if raw:
            return original_compile(self, source, name, filename, raw, defer_init)
        if not isinstance(source, str):
            key, _expression.key = getattr(_expression, "key", None), None
        else:
            key = _key(self, source, name, filename, defer_init)
        if key is None:
            return original_compile(self, source, name, filename, raw, defer_init)
        code = _compiled.get(key)
        if code is None:
            code = original_compile(self, source, name, filename, raw, defer_init)
            _remember(key, code)
        return code

    def compile_expression(self: Any, source: Any, undefined_to_none: bool = True) -> Any:
        key = _key(self, source, "<expression>", None, False) if isinstance(source, str) else None
        code = _compiled.get(key) if key is not None else None
        if code is None:
            _expression.key = key
            try:
                return original_compile_expression(self, source, undefined_to_none)
            finally:
                _expression.key = None
        template = self.template_class.from_code(self, code, self.make_globals(None), None)
        return TemplateExpression(template, undefined_to_none)

    def intercept_init(self: Any, jinja_builtins: Any, plugin_loader: Any) -> None:
        original_intercept_init(self, jinja_builtins, plugin_loader)
        self._wrapped_funcs = _resolved_plugins.setdefault((plugin_loader.type, id(jinja_builtins)), {})

    AnsibleEnvironment.compile = compile
    AnsibleEnvironment.compile_expression = compile_expression
    JinjaPluginIntercept.__init__ = intercept_init
    AnsibleEnvironment._gpucluster_caches = True
