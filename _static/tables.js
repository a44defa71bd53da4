// Wide tables fit the page: a cell or header holding prose (more than 24 characters: a claim, a verdict, a "why")
// is marked "prose" and wraps (book.css); numbers, intervals and "55.62 ± 0.58" stay on one line. A longer text
// gets a wider column (about 3 lines: 1em per 6 characters, 12em to 36em), so that a row stays a few lines tall.
// Before, every cell kept one line, and a table with a prose column scrolled sideways past its verdicts.
document.addEventListener("DOMContentLoaded", () => {
  for (const cell of document.querySelectorAll(".cell_output table td, .cell_output table th")) {
    const length = cell.textContent.trim().length;
    if (length <= 24) continue;
    cell.classList.add("prose");
    cell.style.setProperty("--prose-width", `${Math.min(36, Math.max(12, Math.round(length / 6)))}em`);
  }
});
