/**
 * The pages of an operator action: the confirmation it asks for, and what it did.
 *
 * @module
 */

import { markup } from "./escape.ts";
import { page } from "./page.ts";

/**
 * The confirmation page: the question and a button that posts the action.
 *
 * @example Usage
 * ```ts
 * import { confirmPage } from "./action_page.ts";
 *
 * const doc = confirmPage("disable", "greet-user", 'Disable worker function "greet-user"?');
 * ```
 */
export function confirmPage(action: string, functionName: string, question: string): string {
  return page(
    "Confirm",
    markup`<h1>Confirm</h1><p id="question">${question}</p>
<form method="post" action="actions/${action}">
<input type="hidden" name="function" value="${functionName}">
<button id="confirm">Yes, ${action} ${functionName}</button> <a href="./">Cancel</a></form>`,
  );
}

/**
 * The page after an action (or a refused request): what happened, and the way back.
 *
 * @example Usage
 * ```ts
 * import { resultPage } from "./action_page.ts";
 *
 * const doc = resultPage("Done", 'Worker function "greet-user" is now disabled.');
 * ```
 */
export function resultPage(title: string, message: string): string {
  return page(
    title,
    markup`<h1>${title}</h1><p id="result">${message}</p><p><a href="./">Overview</a></p>`,
  );
}
