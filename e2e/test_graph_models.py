"""The graph models of docs/models.md in the page: the server lists them beside the classifier, and the Classify panel's
Model menu, which loads layers models, does not offer them."""

import json
import urllib.request

from conftest import show_panel

from app.graph_models import MODELS


def test_the_model_menu_offers_the_classifier_and_not_the_graph_models(wasm_page, server_url):
    with urllib.request.urlopen(server_url + "models") as response:
        listed = {m["name"]: m["kind"] for m in json.load(response)["models"]}
    assert listed == {"efficientnet-lite0": "layers-model"} | dict.fromkeys(MODELS, "graph-model")
    page = wasm_page.page
    show_panel(page, "Classify")
    menu = page.get_by_role("combobox", name="Model")
    assert menu.locator("option").all_inner_texts() == ["efficientnet-lite0"]
    assert menu.input_value() == "efficientnet-lite0" and menu.is_enabled()
    assert page.evaluate("playground.models()") == ["efficientnet-lite0"]
