"""For every test and every notebook nbval runs: the learner's exercise progress goes to fresh files,
so a learner's own progress neither changes a notebook's output nor is changed by the tests. The
notebooks' kernels share one file for the session; each test gets its own, so a test that solves an
exercise never shows it done in a notebook's last cell."""

import os
import tempfile

import pytest

os.environ["COURSE_PROGRESS_FILE"] = os.path.join(
    tempfile.mkdtemp(prefix="course-progress-"), "progress.json"
)


@pytest.fixture(autouse=True)
def _own_progress_file(tmp_path_factory):
    # not through monkeypatch: an autouse fixture that takes it is set up first and so torn down
    # last, after fixtures that read the environment the test's own monkeypatch changed
    session = os.environ["COURSE_PROGRESS_FILE"]
    os.environ["COURSE_PROGRESS_FILE"] = str(tmp_path_factory.mktemp("progress") / "progress.json")
    yield
    os.environ["COURSE_PROGRESS_FILE"] = session
