/* A shared chat, read-only: each answer's markdown drawn by HomeAI.renderMarkdown (sanitised, as
 * the chat page draws it); the person's own messages stay the plain text the server wrote. */
(function () {
  "use strict";
  for (const node of document.querySelectorAll(".message-text[data-markdown]")) {
    window.HomeAI.renderMarkdown(node, node.textContent);
  }
})();
