// Sorts the summary's student table by the column whose heading is clicked (each cell's data-sort,
// numbers as numbers). The only script of any page the kit writes: summary.html pins it by its
// digest in its Content-Security-Policy, so no other script could run there.
for (const table of document.querySelectorAll("table.sortable")) {
  const heads = [...table.tHead.rows[0].cells];
  heads.forEach((head, column) => {
    const button = head.querySelector("button");
    if (!button) return;
    button.addEventListener("click", () => {
      const ascending = head.getAttribute("aria-sort") !== "ascending";
      heads.forEach((other) => other.removeAttribute("aria-sort"));
      head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const key = (row) => row.cells[column].dataset.sort ?? row.cells[column].textContent.trim();
      const body = table.tBodies[0];
      const rows = [...body.rows].sort((a, b) => {
        const x = key(a), y = key(b), nx = Number(x), ny = Number(y);
        const order = x !== "" && y !== "" && !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
        return ascending ? order : -order;
      });
      body.append(...rows);
    });
  });
}
