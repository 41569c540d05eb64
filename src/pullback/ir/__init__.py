"""The IR: types, core datatypes, primitive table, builder, names, printer/parser,
type checker and traversals."""
