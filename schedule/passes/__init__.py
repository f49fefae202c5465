"""Loop-IR passes, one per module; each exposes one function ``Stmt -> Stmt``."""
