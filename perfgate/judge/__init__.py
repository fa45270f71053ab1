"""Judge: results + baseline windows -> one verdict per bucket and one GateReport (R5, R6, R8)."""
