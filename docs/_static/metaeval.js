// Every figure of an executed example opens at full size on a click: on a phone a forest
// plot of a dozen tasks is too small to read at the column's width (tests/test_docs_render.py).
document.addEventListener("DOMContentLoaded", () => {
  const images = document.querySelectorAll(
    "div.cell_output img, .bd-article figure img, .bd-article img.align-center"
  );
  for (const img of images) {
    if (img.closest("a")) continue;
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.className = "figure-full-size";
    link.title = "Open the figure at full size";
    img.replaceWith(link);
    link.appendChild(img);
  }
});
