"""The static check: one SELECT, only allowlisted tables (through views, CTEs and subqueries), no
deny-listed functions. It runs before any database sees the query; the database's own read-only
guards (authorizer, role, read-only transaction) stand behind it in case it is ever fooled."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from toolcrib.errors import InvalidArguments, NotPermitted
from toolcrib.sql.labels import claimed_labels

MAX_QUERY_CHARS = 20_000
_MAX_VIEW_DEPTH = 16

DENIED_FUNCTIONS: frozenset[str] = frozenset({
    # SQLite: extension loading and the shell's file functions
    "load_extension", "readfile", "writefile", "edit", "fsdir", "lsdir", "fts3_tokenizer",
    # PostgreSQL: settings, files, network identity, sequences, queries passed as text
    "set_config", "current_setting", "dblink", "inet_server_addr", "inet_server_port",
    "inet_client_addr", "inet_client_port", "nextval", "setval", "currval", "lastval",
    "ts_stat", "ts_rewrite", "txid_current",
})
DENIED_PREFIXES: tuple[str, ...] = (
    "pg_", "lo_", "dblink_", "copy", "pragma_", "query_to_", "table_to_", "schema_to_",
    "database_to_", "cursor_to_", "sqlite_dbpage",
)

# Statement and clause node types that write, change the schema or the session, or lock rows.
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = tuple(
    node for node in (getattr(exp, name, None) for name in (
        "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable",
        "Command", "Pragma", "Set", "Into", "Lock", "Copy", "Grant", "Revoke", "Attach", "Detach",
        "Transaction", "Commit", "Rollback", "Use", "LoadData", "Analyze", "Kill", "Refresh",
        "Cache", "Uncache", "Comment", "Declare",
    )) if isinstance(node, type)
)
_QUERY_ROOTS = (exp.Select, exp.SetOperation, exp.Subquery)


@dataclass(frozen=True)
class CheckedQuery:
    """What the static check learned: the base tables read, the number of placeholders, and the output
    columns named for what their expression does not read (``labels.claimed_labels``)."""

    tables: frozenset[str]
    placeholders: int
    claimed: Mapping[str, str] = field(default_factory=dict)


# SQL a request carries as text: a statement after a terminator, UNION SELECT, a quote closed into an
# always-true condition, or a comment that cuts off the rest of a query
_STATEMENT_TEXT = re.compile(
    r";\s*(?:drop\s+(?:table|view|index|database|schema)|delete\s+from|insert\s+into|update\s+\w+\s+set"
    r"|alter\s+table|truncate\s+\w|create\s+(?:table|view|index|trigger)|grant\s+\w|attach\s+database"
    r"|pragma\s+\w|exec(?:ute)?\s+\w)\b"
    r"|\bunion\s+(?:all\s+)?select\b"
    r"|['\"]\s*(?:or|and)\s+['\"]?\w+['\"]?\s*=\s*['\"]?\w+"
    r"|(?:;|['\"])\s*--",
    re.IGNORECASE)


def statement_text(text: str) -> str:
    """The SQL statement text a request (not a query) carries ("1001; DROP TABLE orders;--"), or ''."""
    match = _STATEMENT_TEXT.search(text)
    return match.group(0) if match else ""


def fold_name(name: str, *, quoted: bool, dialect: str) -> str:
    """An identifier as the database resolves it: SQLite ignores case; PostgreSQL folds unquoted."""
    if dialect == "sqlite" or not quoted:
        return name.lower()
    return name


def fold_allowlist(names: Collection[str], dialect: str) -> frozenset[str]:
    """Allowlist entries are real table names: case-insensitive in SQLite, exact in PostgreSQL."""
    return frozenset(n.lower() if dialect == "sqlite" else n for n in names)


def check_select(
    sql: str,
    allowed_tables: Collection[str],
    *,
    dialect: str = "sqlite",
    views: Mapping[str, str] | None = None,
    schemas: Collection[str] | None = None,
) -> CheckedQuery:
    """Accept exactly one read-only SELECT over allowed tables, or raise a model-facing error.

    ``views`` maps a view's (folded) name to its definition (``SELECT ...`` or ``CREATE VIEW``):
    a view is allowed only when it is on the allowlist and so is every base table it reads.
    ``schemas`` are the qualifiers that mean "the default schema" (``main`` for SQLite).
    """
    if len(sql) > MAX_QUERY_CHARS:
        raise InvalidArguments(f"the query is too long (over {MAX_QUERY_CHARS} characters)")
    tree = _parse_one_select(sql, dialect)
    _refuse_functions(tree)
    allowed = fold_allowlist(allowed_tables, dialect)
    folded_views = {fold_name(k, quoted=True, dialect=dialect): v for k, v in (views or {}).items()}
    qualifiers = frozenset(fold_name(s, quoted=True, dialect=dialect)
                           for s in (schemas if schemas is not None else _default_schemas(dialect)))
    tables = _base_tables(tree, _Readable(allowed, folded_views, qualifiers, dialect), seen=())
    return CheckedQuery(tables=frozenset(tables), placeholders=_count_placeholders(tree),
                        claimed=claimed_labels(tree, dialect))


def _default_schemas(dialect: str) -> tuple[str, ...]:
    return ("main",) if dialect == "sqlite" else ("public",)


def _parse_one_select(sql: str, dialect: str) -> exp.Expression:
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" (line {first.get('line')}, column {first.get('col')})" if first else ""
        description = str(first.get("description", "syntax error")).split(".")[0]
        raise InvalidArguments(f"the query is not valid SQL: {description}{where}") from None
    except (SqlglotError, RecursionError, ValueError):
        raise InvalidArguments("the query is not valid SQL") from None
    real = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(real) != 1:
        raise InvalidArguments("only one SELECT statement is allowed")
    tree = real[0]
    if not isinstance(tree, _QUERY_ROOTS):
        raise NotPermitted(f"only one SELECT statement is allowed (found {_kind(tree)})")
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise NotPermitted(f"only one SELECT statement is allowed (found {_kind(node)})")
    return tree


def _kind(node: object) -> str:
    if isinstance(node, exp.Into):
        return "SELECT ... INTO"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE/SHARE"
    if isinstance(node, exp.Command):
        return str(node.this).split()[0].upper() if node.this else "a command"
    if isinstance(node, (exp.Alias, exp.Column, exp.Identifier)):  # an unknown leading keyword
        return node.sql().split()[0].upper() if node.sql() else "an unknown statement"
    return str(getattr(node, "key", "statement")).upper()


def function_names(node: exp.Func) -> set[str]:
    """The names a function call may go by: as written, or sqlglot's names for a known function."""
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    return {n.lower() for n in node.sql_names()} | {node.key.lower()}


def _refuse_functions(tree: exp.Expression) -> None:
    for node in tree.find_all(exp.Func):
        for name in sorted(function_names(node)):
            if name in DENIED_FUNCTIONS or name.startswith(DENIED_PREFIXES):
                raise NotPermitted(f"function {name} is not allowed")


def _visible_ctes(table: exp.Expression, dialect: str) -> set[str]:
    """CTE names a table reference can mean, by SQL scoping: a CTE body sees earlier CTEs of its
    WITH, and itself only when recursive (SQLite treats any self-reference as recursive)."""
    names: set[str] = set()
    prev: object = table
    passed: object = None
    node = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = [c for c in node.expressions if isinstance(c, exp.CTE)]
            idx = next((i for i, c in enumerate(ctes) if c is prev), len(ctes))
            names.update(_cte_name(c, dialect) for c in ctes[:idx])
            if idx < len(ctes) and (node.args.get("recursive") or dialect == "sqlite"):
                names.add(_cte_name(ctes[idx], dialect))
            passed = node
        else:
            with_ = node.args.get("with_") or node.args.get("with")
            if isinstance(with_, exp.With) and with_ is not passed:
                names.update(_cte_name(c, dialect) for c in with_.expressions if isinstance(c, exp.CTE))
        prev, node = node, node.parent
    return names


def _cte_name(cte: exp.CTE, dialect: str) -> str:
    ident = cte.args["alias"].this if cte.args.get("alias") else None
    if isinstance(ident, exp.Identifier):
        return fold_name(ident.name, quoted=bool(ident.quoted), dialect=dialect)
    return cte.alias.lower()


def _ident(node: exp.Expression | None, dialect: str) -> str:
    if isinstance(node, exp.Identifier):
        return fold_name(node.name, quoted=bool(node.quoted), dialect=dialect)
    return fold_name(node.name, quoted=False, dialect=dialect) if node is not None else ""


def _table_refs(tree: exp.Expression) -> list[tuple[exp.Expression, exp.Expression | None,
                                                    exp.Expression | None, exp.Expression]]:
    """(name, schema, catalog, node) for every stored-table reference, including SQLite's
    ``x IN tablename`` form, which sqlglot reads as a column."""
    refs: list[tuple[exp.Expression, exp.Expression | None, exp.Expression | None, exp.Expression]] = []
    for table in tree.find_all(exp.Table):
        refs.append((table.this, table.args.get("db"), table.args.get("catalog"), table))
    for in_ in tree.find_all(exp.In):
        field = in_.args.get("field")
        if isinstance(field, exp.Column):
            refs.append((field.this, field.args.get("table"), field.args.get("db"), field))
    return refs


@dataclass(frozen=True)
class _Readable:
    """What a query may read: the allowed tables and views (folded), the views' definitions, the
    qualifiers that mean the default schema, and the dialect that reads them."""

    allowed: frozenset[str]
    views: Mapping[str, str]
    qualifiers: frozenset[str]
    dialect: str


def _base_tables(tree: exp.Expression, readable: _Readable, seen: tuple[str, ...]) -> set[str]:
    """The stored tables ``tree`` reads, those under its views too; a table it may not read is refused."""
    dialect = readable.dialect
    tables: set[str] = set()
    for this, db_node, catalog_node, node in _table_refs(tree):
        if not isinstance(this, exp.Identifier):
            if dialect == "sqlite":  # eponymous virtual tables (json_each, dbstat) are not data
                shown = this.sql(dialect="sqlite").split("(")[0].lower()
                raise NotPermitted(f"table-valued function {shown} is not available")
            continue  # a set-returning function: its name went through the function check
        name = _ident(this, dialect)
        db = _ident(db_node, dialect)
        catalog = _ident(catalog_node, dialect)
        if catalog or (db and db not in readable.qualifiers):
            shown = ".".join(p for p in (catalog, db, this.name) if p)
            raise NotPermitted(f"table {shown} is not available")
        if not db and name in _visible_ctes(node, dialect):
            continue
        if name not in readable.allowed:
            raise NotPermitted(f"table {this.name} is not available")
        tables.add(name)
        if name in readable.views:
            tables |= _view_tables(name, readable, seen)
    return tables


def _view_tables(name: str, readable: _Readable, seen: tuple[str, ...]) -> set[str]:
    """The base tables under a view, checked against the same allowlist; fails closed."""
    if name in seen or len(seen) >= _MAX_VIEW_DEPTH:
        raise NotPermitted(f"table {name} is not available")
    try:
        parsed = sqlglot.parse_one(readable.views[name], read=readable.dialect)
    except (SqlglotError, RecursionError, ValueError):
        raise NotPermitted(f"table {name} is not available") from None
    body = parsed.expression if isinstance(parsed, exp.Create) else parsed
    if not isinstance(body, exp.Expression):
        raise NotPermitted(f"table {name} is not available")
    return _base_tables(body, readable, (*seen, name))


def _count_placeholders(tree: exp.Expression) -> int:
    """``?`` placeholders count one each; ``$n`` placeholders count up to the largest n."""
    plain = sum(1 for _ in tree.find_all(exp.Placeholder))
    numbered = [int(p.name) for p in tree.find_all(exp.Parameter) if p.name.isdigit()]
    return plain + (max(numbered) if numbered else 0)
