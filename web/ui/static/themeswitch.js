// themeswitch.js: the colour theme switch in the top bar: System (the
// device's light or dark, the default), Light or Dark. The choice is kept
// in this browser (localStorage "elysia.theme") and put on <html> as
// data-theme, which style.css follows; theme.js applies it early on the
// next visit.
//
// Markup (tests rely on it): select#theme-select with the values "system",
// "light" and "dark"; html[data-theme] is "light" or "dark", absent for
// system.
import { h } from "./render.js";

const KEY = "elysia.theme";
const THEMES = [["system", "System"], ["light", "Light"], ["dark", "Dark"]];

// chosen returns the stored choice, "system" when none.
function chosen() {
  try {
    const t = localStorage.getItem(KEY);
    return t === "light" || t === "dark" ? t : "system";
  } catch {
    return "system";
  }
}

// apply puts theme on the page and keeps it.
function apply(theme) {
  const root = document.documentElement;
  if (theme === "light" || theme === "dark") root.dataset.theme = theme;
  else delete root.dataset.theme;
  try {
    if (theme === "light" || theme === "dark") localStorage.setItem(KEY, theme);
    else localStorage.removeItem(KEY);
  } catch {
    // No storage: the choice lasts as long as the page.
  }
}

// installThemeSwitch adds the switch to the top bar, after the query
// status.
export function installThemeSwitch() {
  if (document.getElementById("theme-select")) return;
  const current = chosen();
  apply(current);
  const select = h("select", {
    id: "theme-select", class: "theme-select", "aria-label": "Colour theme",
    title: "Colour theme: System follows your device's light or dark setting",
  }, THEMES.map(([value, text]) => h("option", { value, selected: value === current }, text)));
  select.addEventListener("change", () => apply(select.value));
  document.getElementById("connection").after(select);
}
