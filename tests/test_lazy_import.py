"""``import vpeval`` and the CLI import lazily (PEP 562); every public name still resolves."""

import subprocess
import sys

import vpeval

_HEAVY = ("matplotlib", "sklearn", "torch", "pandas", "scipy.stats", "scipy.optimize", "pyarrow", "dask")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_vpeval_loads_no_heavy_module():
    loaded = _modules_after("import vpeval")
    assert not loaded & set(_HEAVY), sorted(loaded & set(_HEAVY))


def test_cli_import_loads_no_plotting_or_learning():
    loaded = _modules_after("import vpeval.cli.main")
    assert not loaded & {"matplotlib", "sklearn", "torch", "pandas", "scipy.stats", "vpeval.report"}


def test_every_public_name_resolves():
    for name in vpeval.__all__:
        assert getattr(vpeval, name) is not None, name
    assert set(vpeval.__all__) <= set(dir(vpeval))


def test_from_import_and_attribute_give_the_same_object():
    from vpeval import PLDABackend, eer, simulate, worst_case_disclosure
    from vpeval.metrics.verification import eer as eer_impl

    assert eer is vpeval.eer is eer_impl
    assert PLDABackend is vpeval.PLDABackend
    assert simulate.__name__ == "vpeval.simulate"
    assert worst_case_disclosure is vpeval.worst_case_disclosure


def test_subpackages_reachable_as_attributes_and_unknown_names_refused():
    assert vpeval.metrics.__name__ == "vpeval.metrics"
    assert vpeval.stats.__name__ == "vpeval.stats"
    for bad in ("no_such_name", "_private_thing"):
        try:
            getattr(vpeval, bad)
        except AttributeError as e:
            assert bad in str(e)
        else:
            raise AssertionError(bad)
    assert not hasattr(vpeval, "no_such_name")


def test_cli_disclosure_still_reexports_disclosure_section():
    from vpeval.cli.disclosure import disclosure_section
    from vpeval.report.disclosure import disclosure_section as impl

    assert disclosure_section is impl
