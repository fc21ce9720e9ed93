// theme.js: the colour theme the user chose (themeswitch.js), put on the
// page before it is drawn, so that a choice of dark never flashes light. A
// classic script in <head>, not a module: modules run once the page is
// parsed. No choice, or "system", leaves the theme to the device.
(function () {
  try {
    const t = localStorage.getItem("elysia.theme");
    if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
  } catch {
    // No storage: the device's theme.
  }
})();
