"""The notebook widget's module in Chromium without Jupyter: a model of anywidget's (its
traits, `msg:custom` listeners) made in the page, handed the kernel's messages as a
kernel would send them."""

from __future__ import annotations

import base64
from typing import Any

from playwright.sync_api import Page

from histoscope.view.page import widget_module, widget_page

# A model as anywidget hands one to the module: traits, listeners, and `deliver` to play
# the kernel's custom messages (buffers as DataViews, as the widget manager passes them).
FAKE_MODEL = """
([esm, page, snapshot]) => {
  const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const saved = snapshot ? new DataView(bytes(snapshot).buffer) : null;
  const traits = { _page: page, height: 700, _snapshot: saved };
  const listeners = {};
  const model = {
    get: (name) => traits[name],
    on: (name, fn) => { (listeners[name] = listeners[name] || []).push(fn); },
    off: () => {},
    send: () => {},
  };
  window.__deliver = (header, buffers) => {
    const views = buffers.map((b) => new DataView(bytes(b).buffer));
    for (const fn of listeners["msg:custom"] || []) fn(header, views);
  };
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  return import(url).then((module) => {
    const el = document.createElement("div");
    document.querySelector("main").appendChild(el);
    module.default.initialize({ model });
    module.default.render({ model, el });
  });
}
"""


def open_widget(page: Page, snapshot: bytes | None = None, title: str = "test") -> None:
    """Renders the widget in ``page`` (a blank one, its main landmark standing for the
    notebook's), from ``snapshot`` if given."""
    page.set_content(
        '<!DOCTYPE html><html lang="en"><head><title>widget</title></head>'
        "<body><main></main></body></html>"
    )
    packed = base64.b64encode(snapshot).decode() if snapshot else None
    page.evaluate(FAKE_MODEL, [widget_module(), widget_page(title), packed])


def deliver(page: Page, header: dict[str, Any], buffers: list[bytes]) -> None:
    """Hands the widget one message of the kernel."""
    page.evaluate(
        "([h, b]) => window.__deliver(h, b)",
        [header, [base64.b64encode(b).decode() for b in buffers]],
    )


def held(page: Page) -> dict[str, Any]:
    """What the widget's page holds: the report's data (see widget.js)."""
    data = "document.querySelector('.histoscope-widget').histoscopeData"
    return page.evaluate(f"() => JSON.parse(JSON.stringify({data}))")
