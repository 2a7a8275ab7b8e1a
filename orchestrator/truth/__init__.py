"""The mechanical text truth rules (`sandbench truth rule`, `suite add-tasks`): `rules` states
and runs them, `sources` reads a pinned corpus's tracked sources, `languages` picks each
language's module (`csharp`, `typescript`, `rust`: its lexer and its declarations), and
`lexing` is the loop the lexers share."""
