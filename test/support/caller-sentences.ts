/** What a caller says on a support line, for the speech engines' tests and bench: an order, a date, a number, yes and no. */
export const callerSentences = [
  'Where is my order',
  'I ordered a blue jacket last Tuesday',
  'My order number is four five six seven',
  'Yes that is correct',
  'No I would like to cancel it',
  'Can you deliver it on the third of March',
  'What time do you open tomorrow',
  'I want to speak to an agent please',
];
