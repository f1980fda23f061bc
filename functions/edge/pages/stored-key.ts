/** Where the playground keeps the key it was given: this tab's session storage, read by the reference too. */
export const storedKeyName = 'agent-platform-playground-key';
