"""The notebook widget's module in Chromium without Jupyter: a model of anywidget's (its
traits, `msg:custom` and `change:` listeners) made in the page, handed the kernel's
messages as a kernel would send them, or as a front end that drops binary buffers
(Colab's) passes them on."""

from __future__ import annotations

import base64
from typing import Any

from playwright.sync_api import Page

from histoscope.view.page import widget_module, widget_page

# A model as anywidget hands one to the module: traits, listeners, and two ways to play
# the kernel's messages: `__deliver` a custom message (buffers as DataViews, as the widget
# manager passes them) and `__kernel` a comm message's data as the kernel sent it (a
# custom message, or traits updated). A model that drops buffers, as Colab's widget
# manager does, hands the module none.
FAKE_MODEL = """
([esm, given, snapshot, dropsBuffers]) => {
  const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const saved = snapshot ? new DataView(bytes(snapshot).buffer) : null;
  const traits = Object.assign({ height: 700, _snapshot: saved }, given);
  const listeners = {};
  const fire = (name, ...args) => { for (const fn of listeners[name] || []) fn(...args); };
  const model = {
    get: (name) => traits[name],
    on: (name, fn) => { (listeners[name] = listeners[name] || []).push(fn); },
    off: (name, fn) => { listeners[name] = (listeners[name] || []).filter((f) => f !== fn); },
    send: () => {},
  };
  const views = (buffers) => dropsBuffers ? [] : buffers.map((b) => new DataView(bytes(b).buffer));
  window.__deliver = (header, buffers) => fire("msg:custom", header, views(buffers));
  window.__kernel = (data, buffers) => {
    if (data.method === "custom") fire("msg:custom", data.content, views(buffers));
    if (data.method !== "update") return;
    Object.assign(traits, data.state);
    for (const name of Object.keys(data.state)) fire("change:" + name);
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


def open_widget(
    page: Page,
    snapshot: bytes | None = None,
    title: str = "test",
    traits: dict[str, Any] | None = None,
    drops_buffers: bool = False,
) -> None:
    """Renders the widget in ``page`` (a blank one, its main landmark standing for the
    notebook's), from ``snapshot`` if given, with ``traits`` as the kernel opened the
    model with them (its page made here if they hold none); a model that ``drops_buffers``
    hands the module none, as Colab's widget manager does."""
    page.set_content(
        '<!DOCTYPE html><html lang="en"><head><title>widget</title></head>'
        "<body><main></main></body></html>"
    )
    packed = base64.b64encode(snapshot).decode() if snapshot else None
    given = {"_page": widget_page(title), **(traits or {})}
    esm = given.pop("_esm", None) or widget_module()
    page.evaluate(FAKE_MODEL, [esm, given, packed, drops_buffers])


def from_kernel(page: Page, data: dict[str, Any], buffers: list[str]) -> None:
    """Hands the widget one comm message of the kernel: its data, its buffers as base64."""
    page.evaluate("([d, b]) => window.__kernel(d, b)", [data, buffers])


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
