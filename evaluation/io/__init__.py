"""File I/O apart from logic: atomic writes and folder commits, JSONL/JSON/CSV files, locks, digests.

- :mod:`.atomic`: a file (``atomic_open``, ``atomic_write_bytes``) or a folder
  (``atomic_folder``) replaced whole or not at all;
- :mod:`.output_checks`: what may be written (regular files only) and the
  one-line error of a failed write;
- :mod:`.locks`: one advisory lock per output;
- :mod:`.digests`: content digests of files and model folders, cached;
- :mod:`.utf8`: reading user files as UTF-8 text;
- :mod:`.parsing`: JSON and YAML text parsed safely;
- :mod:`.jsonl`, :mod:`.json_file`, :mod:`.csv_file`: the result formats;
- :mod:`.resumable`: an append-only JSONL results file that resumes.

See ``docs/reliability.md``.
"""
