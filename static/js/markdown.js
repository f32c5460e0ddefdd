/* HomeAI.renderMarkdown(element, text): a model's markdown, drawn into element as inert HTML.
 * Needs static/vendor's markdown-it, DOMPurify and highlight.js loaded before it (see chat.html).
 *
 * Model text is untrusted, so three walls stand between it and the page:
 *   1. markdown-it with html off: tags the model writes stay text. Links and images pass only
 *      with an http(s) or mailto address; images become links (nothing loads by itself), and
 *      table alignment becomes a class instead of a style attribute.
 *   2. DOMPurify over the produced HTML, with an allow-list of the tags and attributes markdown-it
 *      makes and the same address rule: whatever slips past 1 still cannot run or load anything.
 *   3. Links open in a new tab with rel="noopener noreferrer nofollow".
 * Code blocks are highlighted by highlight.js (its output is escaped text in <span class>) and get
 * a copy button; the buttons and wrappers are added as elements after sanitising. */
(function () {
  "use strict";

  const { el, copyButton } = window.HomeAI;
  const { markdownit, DOMPurify, hljs } = window;

  const SAFE_URL = /^(?:https?|mailto):/i;
  const LANG = /^[\w+#.-]{1,32}$/;

  const md = markdownit({ html: false, linkify: true, breaks: true, highlight: highlightFence });
  md.validateLink = (url) => SAFE_URL.test(url.trim());
  const escape = md.utils.escapeHtml;

  // A fenced block: <pre><code class="hljs language-x">, highlighted when highlight.js knows x.
  // The fence's last line break is dropped: pasted into a terminal, it would run the command.
  function highlightFence(source, lang) {
    const code = source.replace(/\n$/, "");
    const name = LANG.test(lang || "") ? lang.toLowerCase() : "";
    const known = name && hljs.getLanguage(name);
    const body = known ? hljs.highlight(code, { language: name, ignoreIllegals: true }).value : escape(code);
    return `<pre><code class="hljs${name ? ` language-${name}` : ""}">${body}</code></pre>`;
  }

  // ![alt](url) becomes a link saying what it is: a remote image must never load on its own.
  md.renderer.rules.image = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    const src = token.attrGet("src") || "";
    const label = interpolate(gettext("Image: %(name)s"), { name: self.renderInlineAsText(token.children, options, env) || src }, true);
    return `<a class="md-image" href="${escape(src)}">${escape(label)}</a>`;
  };

  // Table cells carry style="text-align:…"; styles are not allowed through, a class is.
  md.core.ruler.push("align_class", (state) => {
    for (const token of state.tokens) {
      const style = token.attrGet("style");
      if (!style) continue;
      token.attrs = token.attrs.filter(([name]) => name !== "style");
      const align = /text-align:\s*(left|right|center)/.exec(style);
      if (align) token.attrJoin("class", `align-${align[1]}`);
    }
  });

  const purify = DOMPurify(window);  // an instance of our own: its hook touches no one else's
  const PURIFY_CONFIG = {
    ALLOWED_TAGS: [
      "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol",
      "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
    ],
    ALLOWED_ATTR: ["href", "class", "title", "start"],
    ALLOWED_URI_REGEXP: SAFE_URL,
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  };
  purify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName !== "A" || !node.hasAttribute("href")) return;
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  });

  // Each code block in a frame with its language and a copy button; each table scrolls sideways.
  function decorate(root) {
    for (const pre of root.querySelectorAll("pre")) {
      const code = pre.querySelector("code") || pre;
      const lang = /(?:^|\s)language-(\S+)/.exec(code.className);
      const head = el("div", "code-head");
      head.append(el("span", "code-lang", lang ? lang[1] : "code"),
        copyButton(gettext("Copy"), () => code.textContent, gettext("Copy the code")));
      const block = el("div", "code-block");
      pre.replaceWith(block);
      block.append(head, pre);
    }
    for (const table of root.querySelectorAll("table")) {
      const wrap = el("div", "table-wrap");
      table.replaceWith(wrap);
      wrap.append(table);
    }
    return root;
  }

  // The answer's top-level blocks (a paragraph, a list, a code block, a table...), each as its
  // tokens: markdown-it parses the whole text (references, tight lists and links are resolved
  // there), and each block renders alone to the same HTML it has in the whole.
  function topLevelBlocks(tokens) {
    const blocks = [];
    let start = 0;
    tokens.forEach((token, i) => {
      if (token.level === 0 && token.nesting <= 0) {
        blocks.push(tokens.slice(start, i + 1));
        start = i + 1;
      }
    });
    return blocks;
  }

  const drawn = new WeakMap();  // element -> [{html, nodes}] per block, as last drawn

  /* renderMarkdown(element, text): draw text as markdown into element. Drawn again as an answer
   * streams, only the blocks whose HTML changed are sanitised and replaced (usually the last):
   * finished paragraphs keep their nodes, so the browser lays out and paints only the tail. */
  function renderMarkdown(element, text) {
    element.classList.add("markdown");
    const env = {};
    const tokens = md.parse(text || "", env);
    const html = topLevelBlocks(tokens).map((block) => md.renderer.render(block, md.options, env));
    let before = drawn.get(element) || [];
    if (before.length && !before.every((b) => b.nodes.every((n) => n.parentNode === element))) before = [];
    let same = 0;
    while (same < before.length && same < html.length && before[same].html === html[same]) same += 1;
    if (!before.length) element.replaceChildren();
    for (const block of before.slice(same)) for (const node of block.nodes) node.remove();
    const after = before.slice(0, same);
    for (const blockHtml of html.slice(same)) {
      const fragment = decorate(purify.sanitize(blockHtml, PURIFY_CONFIG));
      const nodes = [...fragment.childNodes];
      element.append(fragment);
      after.push({ html: blockHtml, nodes });
    }
    drawn.set(element, after);
  }

  window.HomeAI = Object.freeze(Object.assign({}, window.HomeAI, { renderMarkdown }));
})();
