/**
 * Time zones of the North American Numbering Plan area codes (`+1 NXX`) of the United States and Canada that lie
 * wholly in one IANA zone. An area code that spans two zones (e.g. 850 in Florida, 541 in Oregon, 208 in Idaho,
 * 605 South Dakota, 701 North Dakota, 270 Kentucky, 423/931 Tennessee, 812 Indiana, 906 Michigan, 620/785 Kansas,
 * 308 Nebraska, 432 Texas, 928 Arizona (the Navajo Nation keeps DST), 907 Alaska, 250/778 British Columbia, 418
 * Quebec, 807 Ontario, 709 Newfoundland and Labrador, 867 the territories) is left out on purpose: the contact's
 * zone is then unknown and the campaign's default applies (docs/contacts.md#time-zones).
 */
const zoneAreaCodes: Readonly<Record<string, string>> = {
  'America/New_York':
    '203 475 860 959 302 202 771 239 305 321 352 386 407 561 727 754 772 786 813 863 904 941 954 689 656 ' +
    '229 404 470 478 678 706 762 770 912 943 207 240 301 410 443 667 227 339 351 413 508 617 774 781 857 978 603 ' +
    '201 551 609 640 732 848 856 862 908 973 212 315 332 347 516 518 585 607 631 646 680 716 718 838 845 914 917 ' +
    '929 934 329 363 252 336 704 743 828 910 919 980 984 216 220 234 283 326 330 380 419 440 513 567 614 740 937 ' +
    '436 215 223 267 272 412 445 484 570 582 610 717 724 814 835 878 401 803 839 843 854 864 802 276 434 540 571 ' +
    '703 757 804 826 948 304 681 859 606 865',
  'America/Detroit': '231 248 269 313 517 586 616 734 810 947 989 679',
  'America/Indiana/Indianapolis': '317 463 260 765',
  'America/Kentucky/Louisville': '502',
  'America/Chicago':
    '219 205 251 256 334 659 938 479 501 870 327 217 224 309 312 331 447 464 618 630 708 773 779 815 847 872 ' +
    '319 515 563 641 712 225 318 337 504 985 218 320 507 612 651 763 952 228 601 662 769 314 417 573 636 660 816 ' +
    '557 405 539 572 580 918 262 414 534 608 715 920 274 210 214 254 281 325 346 361 409 430 469 512 682 713 726 ' +
    '737 806 817 830 832 903 936 940 945 956 972 979 316 913 402 531 615 629 731 901',
  'America/Denver': '303 719 720 970 983 406 505 575 385 435 801 307 915',
  'America/Phoenix': '480 520 602 623',
  'America/Los_Angeles':
    '209 213 279 310 323 341 350 369 408 415 424 442 510 530 559 562 619 626 628 650 657 661 669 707 714 747 760 ' +
    '805 818 820 831 840 858 909 916 925 949 951 206 253 360 425 509 564 702 725 775 503 971',
  'Pacific/Honolulu': '808',
  'America/Toronto': '416 647 437 905 289 365 742 519 226 548 613 343 753 705 249 683 514 438 450 579 354 819 873',
  'America/Winnipeg': '204 431 584',
  'America/Regina': '306 639 474',
  'America/Edmonton': '403 587 780 825 368',
  'America/Vancouver': '604',
  'America/Halifax': '902 782',
  'America/Moncton': '506 428',
};

export const nanpAreaZones: ReadonlyMap<string, string> = new Map(
  Object.entries(zoneAreaCodes).flatMap(([zone, codes]) => codes.split(' ').map((code) => [code, zone] as const)),
);

/**
 * Countries whose zone list has a second entry that keeps the main zone's clock all year (Büsingen, a German
 * exclave on Swiss time) or that is not the legal time (Xinjiang's unofficial zone; China keeps Beijing time), so
 * the country still names one zone for a callee's hours.
 */
export const mainZoneOfCountry: Readonly<Record<string, string>> = {
  DE: 'Europe/Berlin',
  CN: 'Asia/Shanghai',
};
