"""Basic accessibility and layout checks run inside the page (no external tool needed)."""

from __future__ import annotations

# Returns a list of problems: form controls without an accessible name, and visible text whose
# contrast with its background is below WCAG AA (4.5:1, or 3:1 for large or bold-large text).
A11Y_SCRIPT = """
() => {
  const problems = [];
  const visible = (el) => {
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    return style.visibility !== "hidden" && style.display !== "none" && box.width > 0 && box.height > 0;
  };
  for (const el of document.querySelectorAll("input, select, textarea, button")) {
    if (el.type === "hidden" || !visible(el)) continue;
    const named = (el.labels && el.labels.length) || el.getAttribute("aria-label")
      || el.getAttribute("aria-labelledby") || el.title
      || (el.tagName === "BUTTON" && el.textContent.trim());
    if (!named) problems.push("no accessible name: " + el.outerHTML.slice(0, 120));
  }
  const rgb = (value) => {
    const m = value.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const parts = m[1].split(",").map((p) => parseFloat(p));
    return { r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1 };
  };
  const luminance = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c && c.a > 0.5) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  const seen = new Set();
  for (const el of document.querySelectorAll("body *")) {
    if (!visible(el) || ["SCRIPT", "STYLE", "svg", "PROGRESS"].includes(el.tagName)) continue;
    const ownText = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!ownText) continue;
    const style = getComputedStyle(el);
    if (parseFloat(style.opacity) < 1) continue;
    const fg = rgb(style.color);
    const bg = background(el);
    if (!fg) continue;
    const l1 = luminance(fg), l2 = luminance(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(style.fontSize);
    const bold = parseInt(style.fontWeight, 10) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < needed && !el.closest("[disabled]")) {
      const key = el.tagName + "." + el.className + ":" + ratio.toFixed(2);
      if (!seen.has(key)) {
        seen.add(key);
        problems.push("contrast " + ratio.toFixed(2) + " < " + needed + ": " + el.outerHTML.slice(0, 100));
      }
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    problems.push("horizontal overflow: page is " + document.documentElement.scrollWidth + "px wide in a " + window.innerWidth + "px window");
  }
  return problems;
}
"""


def a11y_problems(page) -> list[str]:
    return page.evaluate(A11Y_SCRIPT)
