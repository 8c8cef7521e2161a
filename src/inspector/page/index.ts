export { PAGE_JS } from "./app.js";
export { PAGE_CSS } from "./css.js";
export { PAGE_HTML } from "./html.js";
