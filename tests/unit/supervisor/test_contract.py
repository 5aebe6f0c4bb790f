"""contract.py generation: the reference examples byte for byte, errors, hostile input."""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from stateous.compiler.contract import ContractError, contract_text

DATA = Path(__file__).parent / "data"
CHANGES_CHECKSUM = "sha256:e91f6156912bc79d0914821d1c97fbd1f8e0a937cf57450ba7522b9fe65bebb6"


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_sdlc_contract_is_the_spec_text_byte_for_byte() -> None:
    assert contract_text(load("sdlc.json")) == (DATA / "sdlc_contract.py.txt").read_text()


def test_the_changes_contract_is_the_spec_text_byte_for_byte() -> None:
    text = contract_text(load("changes.json"), CHANGES_CHECKSUM)
    assert text == (DATA / "changes_contract.py.txt").read_text()


def test_the_orders_contract_has_the_checksum_and_classes_of_the_spec() -> None:
    text = contract_text(load("orders.json"))
    assert "# sha256:77510d7465e1e6d8061c1018f6f152e6136aa15304b08e92be3efa62174d7851\n" in text
    assert "class Item(BaseModel):\n    title: str\n\n\nclass Verdict(BaseModel):\n" in text
    assert '    note: str = ""\n' in text
    assert "ItemContext = Context[Item]\n" in text
    assert "    class reviewed(Occurrence[Verdict]):\n" in text
    assert '    draft = StateRef("draft", emits=(events.submitted,))\n' in text
    assert text.endswith('    review = StateRef("review", emits=(events.reviewed,))\n')


def test_a_waiter_without_context_or_events() -> None:
    doc = {
        "stateous": 1,
        "workflow": "waiter",
        "states": {"hold": {"timeout": "1h", "emits": []}},
        "events": {},
        "transitions": [],
        "schemas": {},
    }
    text = contract_text(doc)
    assert "from typing import Never\n\nfrom stateous import StateRef\n" in text
    assert "class events:\n    pass\n" in text
    assert '    hold = StateRef[Never]("hold", emits=())\n' in text
    assert "pydantic" not in text


def test_any_and_literal_and_field_imports() -> None:
    doc = load("sdlc.json")
    doc["schemas"]["Ticket"]["properties"]["extra"] = {"type": "object"}
    doc["schemas"]["Ticket"]["properties"]["mode"] = {"const": 3, "default": 3}
    text = contract_text(doc)
    assert "from typing import Any, Literal\n" in text
    assert "from pydantic import BaseModel, Field\n" in text
    assert "    extra: dict[str, Any] = Field(default_factory=dict[str, Any])\n" in text
    assert "    mode: Literal[3] = 3\n" in text


def _error(doc: dict[str, Any]) -> str:
    with pytest.raises(ContractError) as caught:
        contract_text(doc)
    return caught.value.message


def test_name_errors_of_spec_10() -> None:
    doc = load("sdlc.json")
    doc["events"]["class"] = {}
    assert _error(doc) == "'class' cannot be used as a Python name in the generated contract"
    doc = load("sdlc.json")
    doc["events"]["do-ne"] = {}
    doc["events"]["do_ne"] = {}
    assert _error(doc) == "the events 'do-ne' and 'do_ne' are both 'do_ne' in Python; rename one"
    doc = load("changes.json")
    doc["workflows"]["security_review"] = doc["workflows"]["security-review"]
    assert _error(doc) == (
        "the child workflows 'security-review' and 'security_review' are both "
        "'security_review' in Python; rename one"
    )
    doc = load("changes.json")
    doc["events"]["design_review"] = {}
    assert _error(doc) == (
        "the child workflow 'design-review' and 'design_review' of the workflow 'changes' are "
        "both 'design_review' in Python; rename one"
    )


def test_model_errors() -> None:
    doc = load("sdlc.json")
    doc["schemas"]["Tests"]["properties"]["me"] = {"$ref": "#/schemas/Tests"}
    assert _error(doc) == "the model 'Tests' refers to itself; that is not supported"
    doc = load("sdlc.json")
    doc["schemas"]["Tests"]["properties"]["not ok"] = {"type": "string"}
    assert _error(doc) == "the field 'not ok' of Tests cannot be used as a Python name"
    doc = load("sdlc.json")
    doc["schemas"]["Field"] = {"type": "object", "properties": {}}
    assert (
        _error(doc) == "a model is named 'Field', which contract.py uses itself; rename the model"
    )
    doc = load("sdlc.json")
    doc["schemas"]["TicketContext"] = {"type": "object", "properties": {}}
    assert _error(doc) == (
        "a model is named 'TicketContext', which contract.py uses for the context of Ticket; "
        "rename the model"
    )
    doc = load("sdlc.json")
    doc["context"] = "Nope"
    assert _error(doc) == "the context names the model 'Nope', which 'schemas' does not have"
    doc = load("changes.json")
    doc["workflows"]["design-review"]["events"]["approved"] = {"payload": "Gone"}
    assert _error(doc) == (
        "the event 'approved' of the child workflow 'design-review' names the model 'Gone', "
        "which 'schemas' does not have"
    )
    doc = load("sdlc.json")
    doc["schemas"]["bad name"] = {"type": "object"}
    assert "cannot be a Python name in contract.py" in _error(doc)


HOSTILE = [
    '"',
    '"""',
    "'''",
    "\\",
    '\\"',
    "a\nimport os\nos.system('echo pwned')\n",
    '"); __import__("os").system("echo pwned"); ("',
    "\u2028__import__('os')\u2029",
    "\r\x0b\x0c\x1c\x85",
    "\ud800",
    "\x00",
    "# comment",
    "é 😀",
]


def _import(path: Path) -> Any:
    name = f"hostile_contract_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _allowed_calls(tree: ast.AST) -> list[str]:
    """Every call in the module, by the name called."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            names.append(ast.unparse(node.func))
    return names


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_no_value_of_the_document_can_inject_code(value: str, tmp_path: Path) -> None:
    doc = load("sdlc.json")
    doc["workflow"] = value
    doc["schemas"]["Ticket"]["description"] = value
    doc["schemas"]["Ticket"]["properties"]["repo"]["description"] = value
    props = doc["schemas"]["Ticket"]["properties"]
    props["note"] = {"type": "string", "default": value}
    props["bag"] = {"type": "object", "default": {value: [value, 1.5, None, True]}}
    props["pick"] = {"$ref": "#/schemas/Pick", "default": value}
    doc["schemas"]["Pick"] = {"enum": [value, "x"], "type": "string"}
    text = contract_text(doc)
    tree = ast.parse(text)
    assert set(_allowed_calls(tree)) <= {"StateRef", "Field"}
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert imports == [
        "from __future__ import annotations",
        "from typing import Any, Literal",
        "from pydantic import BaseModel",
        "from stateous import Context, Occurrence, StateRef",
    ]
    for line in text.split("\n"):
        assert "\u2028" not in line and "\u2029" not in line and "\r" not in line
    (tmp_path / "contract.py").write_text(text, encoding="utf-8")
    assert ast.literal_eval(text.split("__workflow__ = ")[1].split("\n")[0]) == value
    if value == "\ud800":
        return  # pydantic cannot build a Literal of a lone surrogate; the text above is safe
    namespace = vars(_import(tmp_path / "contract.py"))
    assert namespace["__workflow__"] == value
    assert typing.get_args(namespace["Pick"]) == (value, "x")
    ticket = namespace["Ticket"](repo="r")
    assert ticket.note == value
    assert ticket.bag == {value: [value, 1.5, None, True]}
    assert ticket.pick == value


@pytest.mark.parametrize("name", ["a.b", "a b", 'x"', "x\ny", "ｃlass", "Ā"])
def test_hostile_event_and_state_names_are_refused(name: str) -> None:
    doc = load("sdlc.json")
    doc["events"][name] = {}
    assert _error(doc).endswith("cannot be used as a Python name in the generated contract")
    doc = load("sdlc.json")
    doc["states"][name] = {"emits": []}
    assert _error(doc).endswith("cannot be used as a Python name in the generated contract")


def test_hostile_field_and_model_names_are_refused() -> None:
    doc = load("sdlc.json")
    doc["schemas"]["Ticket"]["properties"]['x: int = __import__("os")\n'] = {"type": "string"}
    assert "cannot be used as a Python name" in _error(doc)
    doc = load("sdlc.json")
    doc["schemas"]["X(BaseModel): pass\nimport os\nclass Y"] = {"type": "object"}
    assert "cannot be a Python name in contract.py" in _error(doc)
    doc = load("sdlc.json")
    doc["schemas"]["Ticket"]["properties"]["repo"] = {"$ref": "#/schemas/os.system"}
    assert "names a model that 'schemas' does not have" in _error(doc)


def test_a_non_finite_default_is_refused() -> None:
    doc = load("sdlc.json")
    doc["schemas"]["Ticket"]["properties"]["x"] = {"type": "number", "default": float("nan")}
    assert _error(doc) == "nan is not a JSON number"


def test_the_generated_contracts_import(tmp_path: Path) -> None:
    for name, checksum in (("sdlc.json", None), ("changes.json", CHANGES_CHECKSUM)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "contract.py").write_text(contract_text(load(name), checksum), encoding="utf-8")
        sys.path.insert(0, str(folder))
        try:
            sys.modules.pop("contract", None)
            import contract  # type: ignore[import-not-found]

            assert contract.states.__dict__
        finally:
            sys.path.remove(str(folder))
            sys.modules.pop("contract", None)
    assert copy.deepcopy(load("sdlc.json")) == load("sdlc.json")


def test_the_example_folders_hold_the_contracts_of_the_example_graphs() -> None:
    root = Path(__file__).resolve().parents[3] / "examples"
    for workflow in ("orders", "sdlc"):
        graph = json.loads((root / workflow / "build" / f"{workflow}.json").read_text())
        expected = (root / f"{workflow}-supervisor" / "contract.py").read_text(encoding="utf-8")
        assert contract_text(graph) == expected, f"run `stateous init supervisor` for {workflow}"
