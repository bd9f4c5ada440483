// Accessibility audit of the built site: axe-core in a headless Chromium driven by
// playwright-core, with every request that is not to the local server blocked (the site
// must not need the network). Run by tests/test_site.py:
//
//   node audit.mjs CHROMIUM BASE_URL OUTPUT.json PAGE...
//
// For each page (a path under BASE_URL) it writes axe's violations (rule, impact, help,
// failing elements) in the theme's light mode and, for the colour rules, its dark mode; and
// what the page did offline: blocked requests, console errors, typeset maths, broken
// images. For a redirect page, only where it redirects to.
import { createRequire } from "node:module";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const AXE = require.resolve("axe-core/axe.min.js");
const MODES = ["light", "dark"];
// Only colours change with the mode: in dark mode, run only the rules about colour (each axe
// run takes seconds on a chapter page full of typeset maths).
const COLOUR_RULES = ["color-contrast", "link-in-text-block"];

const [executablePath, base, output, ...pages] = process.argv.slice(2);
const origin = new URL(base).origin;
const profile = mkdtempSync(join(tmpdir(), "a11y-profile-"));

// In the page: switch the theme's colour mode as its own switch does, then run axe.
async function audit([mode, rules]) {
  document.documentElement.dataset.mode = mode;
  document.documentElement.dataset.theme = mode;
  await new Promise((resolve) => setTimeout(resolve, 300)); // let the styles settle
  const options = { resultTypes: ["violations"], ...(rules ? { runOnly: rules } : {}) };
  const outcome = await window.axe.run(document, options);
  return outcome.violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact,
    help: violation.help,
    nodes: violation.nodes.map((node) => ({
      target: node.target.join(" "),
      html: node.html.slice(0, 300),
      summary: node.failureSummary,
    })),
  }));
}

const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  viewport: { width: 1280, height: 1000 },
  colorScheme: "light",
});
const results = {};
try {
  for (const path of pages) {
    const html = await (await fetch(`${base}/${path}`)).text();
    const refresh = html.match(/<meta[^>]*http-equiv="refresh"[^>]*url=([^"]*)"/i);
    if (refresh) {
      // A redirect (index.html -> the first page): its target is audited on its own.
      results[path] = { redirect: refresh[1] };
      continue;
    }
    const blocked = [];
    const consoleErrors = [];
    const page = await context.newPage();
    await page.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith("data:") || url.startsWith("blob:")) {
        return route.continue();
      }
      blocked.push(url);
      return route.abort("internetdisconnected");
    });
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    await page.goto(`${base}/${path}`, { waitUntil: "load" });
    const render = await page.evaluate(async () => {
      if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
      return {
        typeset: document.querySelectorAll("mjx-container").length,
        math_errors: document.querySelectorAll("mjx-merror").length,
        raw_math: document.querySelectorAll("main .math:not(:has(mjx-container))").length,
        broken_images: [...document.images]
          .filter((image) => !image.complete || image.naturalWidth === 0)
          .map((image) => image.src),
      };
    });
    await page.addScriptTag({ path: AXE });
    const modes = {};
    for (const mode of MODES) {
      modes[mode] = await page.evaluate(audit, [mode, mode === "light" ? null : COLOUR_RULES]);
    }
    const version = await page.evaluate(() => window.axe.version);
    results[path] = { ...render, version, modes, blocked, console_errors: consoleErrors };
    await page.close();
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
writeFileSync(output, JSON.stringify(results, null, 1));
