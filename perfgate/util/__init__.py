"""Small utilities every stage uses: strict JSON and YAML files, git, commands with a time
limit, console output and credential redaction. No perfgate concept lives here."""
