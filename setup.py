"""The one thing pyproject.toml cannot say: profkit's packages are found, never listed by hand (a
new subpackage cannot be left out of the wheel), and the lab's kernels/ folder installs beside them
as `profkit_lab`, never as `kernels` (a name PyPI already uses)."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["profkit", "profkit.*"]), "profkit_lab"],
    package_dir={"profkit_lab": "kernels"},
)
